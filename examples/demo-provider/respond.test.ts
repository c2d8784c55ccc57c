import { describe, expect, test } from "bun:test";
import { HELP, type ToolSpec, respond } from "./respond.ts";

const tools: ToolSpec[] = [
  { type: "function", function: { name: "lookup_customer", description: "Look up a customer by id.", parameters: { properties: { customer_id: { type: "string" } }, required: ["customer_id"] } } },
  {
    type: "function",
    function: {
      name: "update_customer",
      description: "Change a customer's email address.",
      parameters: { properties: { customer_id: { type: "string" }, email: { type: "string" } }, required: ["customer_id", "email"] },
    },
  },
  { type: "function", function: { name: "list_open", description: "List the open support tickets.", parameters: { properties: {} } } },
];
const user = (content: string) => ({ messages: [{ role: "user", content }], tools });

describe("the demo model", () => {
  test("calls the tool the message names, with the arguments its schema requires", () => {
    expect(respond(user("Please look up customer c-1"))).toEqual({ toolCall: { name: "lookup_customer", arguments: '{"customer_id":"c-1"}' } });
    expect(respond(user("list the open tickets"))).toEqual({ toolCall: { name: "list_open", arguments: "{}" } });
    expect(respond(user("change the email of customer c-1 to ada@new.example"))).toEqual({ toolCall: { name: "update_customer", arguments: '{"customer_id":"c-1","email":"ada@new.example"}' } });
  });

  test("a time zone for a time server's tool (docs/mcp.md, Try it in the demo)", () => {
    const time: ToolSpec[] = [
      {
        type: "function",
        function: { name: "svc_time.get_current_time", description: "Get current time in a specific timezones", parameters: { properties: { timezone: { type: "string" } }, required: ["timezone"] } },
      },
    ];
    expect(respond({ messages: [{ role: "user", content: "what is the current time in Europe/Berlin" }], tools: time })).toEqual({
      toolCall: { name: "svc_time.get_current_time", arguments: '{"timezone":"Europe/Berlin"}' },
    });
    expect(respond({ messages: [{ role: "user", content: "current time in UTC please" }], tools: time })).toEqual({ toolCall: { name: "svc_time.get_current_time", arguments: '{"timezone":"UTC"}' } });
  });

  test("asks for a missing argument instead of inventing one", () => {
    const a = respond(user("look up a customer"));
    expect(a).toEqual({ text: expect.stringContaining("customer id") });
  });

  test("answers a tool's result, and says when svc refused the call", () => {
    expect(
      respond({
        messages: [
          { role: "user", content: "x" },
          { role: "tool", content: "Ada Lovelace <ada@example.com>" },
        ],
      }),
    ).toEqual({ text: "The tool answered: Ada Lovelace <ada@example.com>" });
    expect(respond({ messages: [{ role: "tool", content: "Refused (svc.denied): no policy permits this call" }] })).toEqual({
      text: "The call was refused by svc: Refused (svc.denied): no policy permits this call",
    });
    // the guard's failed-call shape (Open WebUI shows it as a failed call)
    expect(respond({ messages: [{ role: "tool", content: '{"error": "Refused (svc.denied): no policy permits this call"}' }] })).toEqual({
      text: "The call was refused by svc: Refused (svc.denied): no policy permits this call",
    });
    expect(respond({ messages: [{ role: "tool", content: '{"count": 2}' }] })).toEqual({ text: 'The tool answered: {"count": 2}' });
  });

  test("without a matching tool (or tools at all) it explains what it can do", () => {
    expect(respond(user("hello there"))).toEqual({ text: HELP });
    expect(respond({ messages: [{ role: "user", content: "look up customer c-1" }] })).toEqual({ text: HELP });
  });
});

describe("the demo provider's wire format", async () => {
  const { handle } = await import("./server.ts");
  test("a streamed tool call is one delta with the whole call, then finish_reason tool_calls and [DONE]", async () => {
    const text = await handle({ ...user("look up customer c-1"), stream: true }).text();
    const chunks = text
      .split("\n\n")
      .filter(Boolean)
      .map((l) => l.slice("data: ".length));
    expect(chunks.at(-1)).toBe("[DONE]");
    const parsed = chunks.slice(0, -1).map((c) => JSON.parse(c));
    expect(parsed[1].choices[0].delta.tool_calls[0].function).toEqual({ name: "lookup_customer", arguments: '{"customer_id":"c-1"}' });
    expect(parsed.at(-1).choices[0].finish_reason).toBe("tool_calls");
  });

  test("usage only when the stream asks for it; always on a plain completion", async () => {
    const asked = await handle({ ...user("hello"), stream: true, stream_options: { include_usage: true } }).text();
    expect(asked).toContain('"choices":[],"usage":{"prompt_tokens"');
    expect(await handle({ ...user("hello"), stream: true }).text()).not.toContain("prompt_tokens");
    const plain = (await handle(user("hello")).json()) as any;
    expect(plain.choices[0].message.content).toBe(HELP);
    expect(plain.usage.completion_tokens).toBeGreaterThan(0);
  });
});
