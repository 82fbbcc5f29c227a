/**
 * host.ts's `host`, `hostGit` and `hostReadOnly` for `gitport/node`: the protocol servers
 * (upload-pack with pack writing, bitmaps and delta search; receive-pack with pack import and
 * object checks; smart HTTP's handlers) are imported when the first request needs them, so that
 * a thread that only clones or fetches, and loads `gitport/node` for it, does not load them.
 */
import type { Bus } from '@gitport/bus';
import { type Host, type HostOptions, httpPart, receiveWith, serve, serveControl } from './host-core.js';
import type { HostedRepository, RepositoryRegistry } from './registry.js';

const upload = () => import('@gitport/protocol/internal/upload-pack');
const receive = receiveWith(() => import('@gitport/protocol/internal/receive-pack'));
const http = httpPart(() => import('@gitport/protocol/internal/http'));

/** `host` of `gitport` (see host.ts). */
export function host(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions = {},
): Host {
  return serve(bus, repositories, options, options.control === false ? [http] : [http, serveControl], upload, receive);
}

/** `hostGit` of `gitport` (see host.ts). */
export function hostGit(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: HostOptions = {},
): Host {
  return serve(bus, repositories, options, [], upload, receive);
}

/** `hostReadOnly` of `gitport` (see host.ts). */
export function hostReadOnly(
  bus: Bus,
  repositories: RepositoryRegistry | Record<string, HostedRepository>,
  options: Omit<HostOptions, 'receivePack' | 'control' | 'manage'> = {},
): Host {
  return serve(bus, repositories, options, [], upload, undefined);
}
