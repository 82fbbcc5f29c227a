/** Runs the `gitport` command from sources (tests start it through tsx). */
import { main } from '@gitport/cli';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`gitport: ${error?.message ?? error}\n`);
    process.exitCode = 1;
  },
);
