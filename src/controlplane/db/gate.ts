// One SQLite connection, many concurrent requests: while one request's transaction is open,
// every statement from any other request waits until it ends, so nothing of theirs lands
// inside it (and is rolled back with it) and nothing of its uncommitted state leaks out.
// The transaction's own statements are recognised by the async context they run in.
import { AsyncLocalStorage } from "node:async_hooks";

export class TransactionGate {
  readonly #context = new AsyncLocalStorage<object>();
  #holder: object | null = null;
  /** Set from when `between` is called until its body is done: new transactions wait, lone statements do not. */
  #between = false;
  #waiting: (() => void)[] = [];

  /** True when a statement from the current context may run now. */
  open(): boolean {
    return this.#holder === null || this.#context.getStore() === this.#holder;
  }

  /**
   * Runs the synchronous `statement` once the current context may. The check and the run are
   * one step: woken with a waiting transaction, a statement that resumed after the check could
   * otherwise find that transaction begun meanwhile, and be committed or rolled back with it.
   */
  async statement<T>(statement: () => T): Promise<T> {
    while (!this.open()) await new Promise<void>((wake) => this.#waiting.push(wake));
    return statement();
  }

  /** Whether the current context is inside a transaction of this gate. */
  inside(): boolean {
    return this.#holder !== null && this.#context.getStore() === this.#holder;
  }

  /** Runs `body` as the only transaction; others (and lone statements) wait for it to end. */
  async exclusive<T>(body: () => Promise<T>): Promise<T> {
    while (this.#holder !== null || this.#between) await new Promise<void>((wake) => this.#waiting.push(wake));
    const holder = {};
    this.#holder = holder;
    try {
      return await this.#context.run(holder, body);
    } finally {
      this.#holder = null;
      for (const wake of this.#waiting.splice(0)) wake();
    }
  }

  /**
   * Runs `body` between transactions: the one under way ends first, and new ones wait until
   * `body` is done. Lone statements go on meanwhile (none is inside a transaction): a reader
   * waits for no one, and `body` (async, the event loop free) holds only the writers.
   */
  async between<T>(body: () => Promise<T>): Promise<T> {
    while (this.#between) await new Promise<void>((wake) => this.#waiting.push(wake));
    // claimed before the transaction under way ends: back-to-back transactions would otherwise
    // take the gate, each, before this one's turn came
    this.#between = true;
    try {
      while (this.#holder !== null) await new Promise<void>((wake) => this.#waiting.push(wake));
      return await body();
    } finally {
      this.#between = false;
      for (const wake of this.#waiting.splice(0)) wake();
    }
  }
}
