export async function serve(_args: readonly string[]): Promise<number> {
  process.stderr.write('gitport serve: not available yet\n');
  return 2;
}
