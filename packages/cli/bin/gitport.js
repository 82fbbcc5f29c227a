#!/usr/bin/env node
import { main } from '../dist/index.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`gitport: ${error?.message ?? error}\n`);
    process.exitCode = 1;
  },
);
