export async function packObjects(_args: readonly string[]): Promise<number> {
  process.stderr.write('gitport pack-objects: not available yet\n');
  return 2;
}
