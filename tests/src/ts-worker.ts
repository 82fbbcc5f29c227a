/** TypeScript workers and child processes of `@gitport/test-helpers`, at the path tests/ and benchmarks/ import them by. */
export * from '@gitport/test-helpers/ts-worker';
