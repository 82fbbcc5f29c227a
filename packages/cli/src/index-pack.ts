export async function indexPack(_args: readonly string[]): Promise<number> {
  process.stderr.write('gitport index-pack: not available yet\n');
  return 2;
}
