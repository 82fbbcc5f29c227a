/**
 * The emitter libraries the in-browser bench compares against are dependencies of the benchmarks
 * package, not of tests/: the page imports them as `bench-peer/<name>`, which the bench's vite
 * server aliases to the benchmarks package's copies (tests/src/gitport/browser-bench.ts);
 * emitter.ts takes their exports by shape.
 */
declare module 'bench-peer/nanoevents';
declare module 'bench-peer/eventemitter3';
declare module 'bench-peer/mitt';
