/**
 * The first pkt-line of a stateful git session on the bus: what a remote sends and a host
 * parses. Apart from host.ts so that a context that only clones or fetches does not load the
 * serving side with it.
 */
import { encodeData } from '@gitport/pktline';
import type { GitService } from '@gitport/protocol';
import { GitportError } from './errors.js';

/** The bus stream name of stateful git sessions. */
export const GIT_STREAM = 'gitport.git';

export interface GitRequest {
  service: GitService;
  repository: string;
  /** Extra parameters (`version=2`). */
  parameters: string[];
}

const encoder = new TextEncoder();

/** The first pkt-line of a stateful session. */
export function encodeGitRequest(request: GitRequest): Uint8Array {
  const extra = request.parameters.length > 0 ? `\0${request.parameters.map((p) => `${p}\0`).join('')}` : '';
  return encodeData(encoder.encode(`${request.service} /${request.repository}.git\0host=gitport\0${extra}`));
}

export function parseGitRequest(line: string): GitRequest {
  const nul = line.indexOf('\0');
  const head = nul >= 0 ? line.slice(0, nul) : line;
  const space = head.indexOf(' ');
  const service = head.slice(0, space);
  const path = head.slice(space + 1);
  if ((service !== 'git-upload-pack' && service !== 'git-receive-pack') || !/^\/.+\.git$/.test(path)) {
    throw new GitportError('HTTP_BAD_REQUEST', `bad git request ${JSON.stringify(head.slice(0, 200))}`);
  }
  const fields = nul >= 0 ? line.slice(nul + 1).split('\0') : [];
  // host-parameter first, then an empty field, then the extra parameters.
  const blank = fields.indexOf('');
  const parameters = blank >= 0 ? fields.slice(blank + 1).filter((f) => f !== '') : [];
  return { service, repository: path.slice(1, -4), parameters };
}
