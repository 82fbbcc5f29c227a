/** The real-git sandbox of `@gitport/test-helpers`, at the path the files of tests/ import it by. */
export * from '@gitport/test-helpers/git';
