/**
 * The download alone of a clone over smart HTTP, the peer the HTTP clone benchmarks put gitport's
 * clone next to (in Node and in a browser worker): the protocol v2 `fetch` request a clone of
 * `want` sends (every object, no haves), its response read to the end and dropped. Resolves to
 * the response's size in bytes. Needs only the global `fetch`.
 */
const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;

export async function downloadClonePack(repositoryUrl: string, want: string): Promise<number> {
  const body = `${pkt('command=fetch\n')}0001${pkt('ofs-delta\n')}${pkt(`want ${want}\n`)}${pkt('done\n')}0000`;
  const response = await fetch(`${repositoryUrl}/git-upload-pack`, {
    method: 'POST',
    body,
    headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request' },
  });
  if (!response.ok || response.body === null) throw new Error(`download: HTTP ${response.status}`);
  const reader = response.body.getReader();
  let bytes = 0;
  for (;;) {
    const step = await reader.read();
    if (step.done) return bytes;
    bytes += step.value.byteLength;
  }
}
