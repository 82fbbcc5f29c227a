/** What the demo page and its worker say to each other (structured-clone values). */

export interface OpenRepository {
  type: 'open';
  /** A repository name of the server. */
  name: string;
}

export interface CommitSummary {
  oid: string;
  subject: string;
  author: string;
}

export type WorkerMessage =
  | { type: 'progress'; message: string }
  | {
      type: 'state';
      name: string;
      /** HEAD's commit, undefined for an empty repository. */
      head: string | undefined;
      /** First-parent history from HEAD, newest first (at most LOG_LIMIT commits). */
      log: CommitSummary[];
      /** HEAD's tree, every file path. */
      files: string[];
      /** Why this state: the clone, or a live update that was fetched. */
      cause: 'clone' | 'update';
    }
  | { type: 'error'; code: string; message: string };

export const LOG_LIMIT = 50;
