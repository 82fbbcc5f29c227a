/** Runs the `gitport` command from its TypeScript sources (for tests, through tsx). */
import { main } from '@gitport/cli';

process.exitCode = await main(process.argv.slice(2));
