/**
 * gitport: repositories on disk or in the browser, hosting a repository on a bus peer,
 * clone/fetch/push from another context, an isomorphic-git `http` plugin over the transport, and
 * a comlink control API. Node's fs adapter lives in `gitport/node`.
 */

export * from './exports.js';
export {
  encodeGitRequest,
  GIT_STREAM,
  type GitRequest,
  type Host,
  type HostOptions,
  host,
  hostGit,
  hostReadOnly,
  parseGitRequest,
} from './host.js';
