// For tests: a TCP relay in front of a PostgreSQL server that counts round trips, the client
// sending again after the server has answered. Statements the client sends together (Bun.SQL's
// pipelining) are one round trip however many they are, as the server's time in between says.
// `delayMs` holds each answer back, as a server across a network would.

export type RoundTripCounter = { url: string; turns(): number; close(): void };

export function roundTripCounter(serverUrl: string, delayMs = 0): RoundTripCounter {
  const upstream = new URL(serverUrl);
  let turns = 0;
  let answered = true;
  type Link = { server: Promise<Bun.Socket>; closed: boolean };
  const relay = Bun.listen<Link>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = {
          closed: false,
          server: Bun.connect({
            hostname: upstream.hostname,
            port: Number(upstream.port || 5432),
            socket: {
              data(_server, bytes) {
                const copy = Buffer.from(bytes);
                const deliver = () => {
                  answered = true;
                  if (!client.data.closed) client.write(copy);
                };
                if (delayMs > 0) setTimeout(deliver, delayMs);
                else deliver();
              },
              close() {
                client.end();
              },
            },
          }),
        };
      },
      async data(client, bytes) {
        if (answered) turns++;
        answered = false;
        const copy = Buffer.from(bytes);
        (await client.data.server).write(copy);
      },
      close(client) {
        client.data.closed = true;
        void client.data.server.then((s) => s.end());
      },
    },
  });
  const url = new URL(serverUrl);
  url.hostname = "127.0.0.1";
  url.port = String(relay.port);
  return { url: url.toString(), turns: () => turns, close: () => relay.stop(true) };
}
