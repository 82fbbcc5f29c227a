/**
 * The receive-pack server (what `git push` talks to). Push is always protocol v0.
 * gitprotocol-pack(5) "Pushing Data To a Server", gitprotocol-capabilities(5).
 *
 *   update-requests   =  *shallow ( command-list | push-cert )
 *   command-list      =  PKT-LINE(command NUL capability-list) *PKT-LINE(command) flush-pkt
 *   command           =  create / delete / update
 *   create            =  zero-id SP new-id  SP name
 *   delete            =  old-id  SP zero-id SP name
 *   update            =  old-id  SP new-id  SP name
 *   push-options      =  *PKT-LINE(push-option) flush-pkt      (after the commands, if negotiated)
 *   packfile          =  the raw pack, omitted when every command is a delete
 *
 *   report-status     =  unpack-status 1*(command-status) flush-pkt
 *   unpack-status     =  PKT-LINE("unpack" SP unpack-result)
 *   command-status    =  PKT-LINE("ok" SP refname) / PKT-LINE("ng" SP refname SP error-msg)
 *
 * Order of work, so that a failed push moves no ref and leaves nothing behind: read the commands;
 * receive the pack into a quarantine (importPack verifies the trailer and every object, completes
 * thin packs; with `fsckObjects` every commit, tree and tag passes git's fsck checks); check
 * names, connectivity from every new tip (reading through the quarantine, see connectivity.ts),
 * branch targets, old values, fast-forward, hooks; migrate the quarantine into the repository;
 * then one compare-and-swap transaction on the RefStore (`atomic`: all or none). A push refused
 * before migrating leaves nothing; one whose every ref the transaction refused has its pack
 * taken out again (unless a ref points into it by then). Any failure on the way refuses the
 * commands it concerns: the client always gets a report. With side-band-64k the whole report
 * travels in band 1.
 */
import type { Migration, ObjectId, ObjectStore, ObjectType, PackLimits, Quarantine } from '@gitport/pack';
import { ZERO_ID } from '@gitport/pack/internal/object';
import { importPack } from '@gitport/pack/internal/pack-import';
import { openQuarantine } from '@gitport/pack/internal/quarantine';
import { encodeText, FLUSH, packetText, SidebandMuxer } from '@gitport/pktline';
import { collectRefs, encodeAdvertisementV0 } from './advertisement.js';
import { Capabilities, DEFAULT_AGENT, receivePackCapabilities } from './capabilities.js';
import { CommitGraph } from './commit-graph.js';
import { type Connection, concatBytes, newReader, type Repository, requirePacket } from './connection.js';
import { ConnectivityCheck } from './connectivity.js';
import { hasCode, oneLine, ProtocolError, peerErrorMessage, throwIfAborted } from './errors.js';
import { checkObject } from './object-check.js';
import { isValidRefName, type Ref, type RefUpdate } from './ref-store.js';

export interface PushCommand {
  name: string;
  /** `null` for a create. */
  old: ObjectId | null;
  /** `null` for a delete. */
  new: ObjectId | null;
}

export type PushCommandResult =
  | (PushCommand & { status: 'ok' })
  | (PushCommand & { status: 'rejected'; reason: string });

export interface ReceivePackResult {
  /** `ok`, or the unpack error sent to the client (only what peerErrorMessage lets out). */
  unpack: 'ok' | string;
  /** The error behind a failed unpack, with its local detail: for the host's own reports. */
  unpackError?: unknown;
  commands: PushCommandResult[];
  /** The refs that moved (what a host emits as ref-update events). */
  updated: PushCommand[];
  pushOptions: string[];
  /**
   * Errors behind refs refused for a failure rather than a verdict (the ref store, a hook, the
   * walk threw), with their local detail: for the host's own reports. The client was told only
   * what peerErrorMessage lets out.
   */
  errors?: unknown[];
}

export interface ReceivePackHooks {
  /**
   * Before any ref moves, with every command that passed the checks; a string rejects them all.
   * `objects` reads the pushed objects (still quarantined) and the repository's.
   */
  preReceive?(commands: readonly PushCommand[], pushOptions: readonly string[], objects: ObjectStore): Promise<unknown>;
  /** Per ref; a string rejects that ref. */
  update?(command: PushCommand, objects: ObjectStore): Promise<unknown>;
}

export interface ReceivePackLimits {
  /** Most commands in one push (default 100,000). */
  maxCommands?: number;
  /** Most push options (default 100) and their total bytes (default 64 KiB). */
  maxPushOptions?: number;
  pack?: PackLimits;
}

export interface ReceivePackOptions {
  agent?: string;
  /** The version the client asked for (`Git-Protocol`/`GIT_PROTOCOL`); push answers v0, or v1 when asked. */
  protocol?: 0 | 1 | 2;
  stateless?: boolean;
  /** Stateful only: send the advertisement first (default true). */
  advertise?: boolean;
  /** Accept non-fast-forward updates (git's default, `receive.denyNonFastForwards=false`). Default true. */
  allowNonFastForward?: boolean;
  /** Accept deletes (default true). */
  allowDeletes?: boolean;
  /**
   * Accept deleting the branch HEAD points to (default false: git's `receive.denyDeleteCurrent`
   * refuses it, since it would leave HEAD dangling for every later clone).
   */
  allowDeleteCurrent?: boolean;
  hooks?: ReceivePackHooks;
  /**
   * git's `receive.fsckObjects`: every pushed commit, tree and tag must pass git's fsck checks
   * (object-check.ts), or the whole push fails to unpack. Default false (git's default): only
   * what the connectivity walk reads is checked, and only what it needs.
   */
  fsckObjects?: boolean;
  limits?: ReceivePackLimits;
  signal?: AbortSignal;
}

function line(text: string): Uint8Array {
  return encodeText(`${text}\n`);
}

/** Encodes the receive-pack advertisement (no HEAD, no peeled lines). */
export async function receivePackAdvertisement(
  repo: Repository,
  options: { agent?: string; service?: boolean; protocol?: 0 | 1 | 2 } = {},
): Promise<Uint8Array> {
  const graph = new CommitGraph(repo.objects);
  const { refs } = await collectRefs(repo.refs, graph, { head: false, peel: false });
  const caps = receivePackCapabilities({ agent: options.agent ?? DEFAULT_AGENT });
  return encodeAdvertisementV0(refs, caps, {
    ...(options.service ? { service: 'git-receive-pack' } : {}),
    // push is v0; a client that asked for v1 gets the `version 1` line first
    ...(options.protocol === 1 ? { version: 1 as const } : {}),
  });
}

/**
 * Serves one push over `conn`. Resolves with what happened (also when refs were refused);
 * rejects only when the exchange itself failed (then no ref moved).
 */
export async function serveReceivePack(
  repo: Repository,
  conn: Connection,
  options: ReceivePackOptions = {},
): Promise<ReceivePackResult> {
  try {
    return await receive(repo, conn, options);
  } finally {
    await conn.end().catch(() => {});
  }
}

async function receive(repo: Repository, conn: Connection, options: ReceivePackOptions): Promise<ReceivePackResult> {
  const { signal } = options;
  if (!options.stateless && options.advertise !== false) {
    await conn.write(
      await receivePackAdvertisement(repo, {
        ...(options.agent ? { agent: options.agent } : {}),
        ...(options.protocol !== undefined ? { protocol: options.protocol } : {}),
      }),
    );
  }
  const reader = newReader(conn.input, signal);
  const commands: PushCommand[] = [];
  let caps = new Capabilities();
  const maxCommands = options.limits?.maxCommands ?? 100_000;
  const result: ReceivePackResult = { unpack: 'ok', commands: [], updated: [], pushOptions: [] };
  for (let first = true; ; first = false) {
    const packet = await reader.read();
    if (!packet) {
      if (first) return result; // nothing to do
      throw new ProtocolError('PROTOCOL_UNEXPECTED_EOF', 'the remote end hung up while sending commands');
    }
    if (packet.kind === 'flush') break;
    let text = packetText(packet);
    if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${packet.kind} in commands`);
    if (text.startsWith('shallow ')) continue; // pushes from shallow clones: connectivity decides
    const nul = text.indexOf('\0');
    if (nul >= 0) {
      if (commands.length === 0) caps = Capabilities.parse(text.slice(nul + 1));
      text = text.slice(0, nul);
    }
    const m = /^([0-9a-f]{40}) ([0-9a-f]{40}) (.+)$/.exec(text);
    if (!m)
      throw new ProtocolError('PROTOCOL_BAD_LINE', `protocol error: expected old/new/ref, got ${JSON.stringify(text)}`);
    if (commands.length >= maxCommands) throw new ProtocolError('PROTOCOL_LIMIT', `more than ${maxCommands} commands`);
    const [, oldId, newId, name] = m as unknown as [string, string, string, string];
    commands.push({ name, old: oldId === ZERO_ID ? null : oldId, new: newId === ZERO_ID ? null : newId });
  }
  if (commands.length === 0) return result;
  if (caps.has('push-options')) {
    const maxOptions = options.limits?.maxPushOptions ?? 100;
    let bytes = 0;
    for (;;) {
      const p = await requirePacket(reader, 'reading push options');
      if (p.kind === 'flush') break;
      const text = packetText(p);
      if (text === undefined) throw new ProtocolError('PROTOCOL_UNEXPECTED', `unexpected ${p.kind} in push options`);
      bytes += text.length;
      if (result.pushOptions.length >= maxOptions || bytes > 65536) {
        throw new ProtocolError('PROTOCOL_LIMIT', 'too many push options');
      }
      result.pushOptions.push(text);
    }
  }

  let quarantine: Quarantine | undefined;
  try {
    const pushed = new Map<ObjectId, ObjectType>();
    if (commands.some((c) => c.new !== null)) {
      try {
        quarantine = await openQuarantine(repo.objects);
        const imported = await importPack(quarantine, reader.rest(), {
          fixThin: true,
          ...(options.limits?.pack ? { limits: options.limits.pack } : {}),
          ...(signal ? { signal } : {}),
        });
        imported.objects.forEach((oid, i) => {
          pushed.set(oid, imported.types[i] as ObjectType);
        });
        // thin-pack bases come from the repository: they were checked when they arrived (or
        // predate the checks), as git's index-pack --strict leaves them
        if (options.fsckObjects) {
          const sent = imported.objects.length - imported.thinBases;
          await fsckPushed(quarantine, imported.objects.slice(0, sent), pushed, signal);
        }
      } catch (error) {
        if (signal?.aborted || hasCode(error, 'PROTOCOL_ABORTED')) throw error;
        result.unpack = `unpacker error: ${peerErrorMessage(error)}`.slice(0, 1000);
        result.unpackError = error;
        result.commands = commands.map((c) => ({ ...c, status: 'rejected', reason: 'unpacker error' }));
        // nothing of a refused push stays by the time the client reads why
        await quarantine?.discard().catch(() => undefined);
        await report(conn, caps, result);
        return result;
      }
    }
    throwIfAborted(signal);
    await decide(repo, quarantine, pushed, commands, caps, options, result);
    await quarantine?.discard().catch(() => undefined);
    await report(conn, caps, result);
    return result;
  } finally {
    await quarantine?.discard().catch(() => undefined);
  }
}

/**
 * Decides every command and applies the accepted ones, filling `result`. Whatever fails on the
 * way (the ref store, a hook, the walk) refuses the commands it concerns, with a reason: every
 * command ends `ok` or `ng`, never without a report.
 */
async function decide(
  repo: Repository,
  quarantine: Quarantine | undefined,
  pushed: ReadonlyMap<ObjectId, ObjectType>,
  commands: readonly PushCommand[],
  caps: Capabilities,
  options: ReceivePackOptions,
  result: ReceivePackResult,
): Promise<void> {
  const { signal } = options;
  // every check reads through the quarantine: the pushed objects, then the repository's
  const objects = quarantine ?? repo.objects;
  const graph = new CommitGraph(objects);
  const verdicts = new Map<PushCommand, string>();
  const errors: unknown[] = [];
  const reject = (c: PushCommand, reason: string) => {
    if (!verdicts.has(c)) verdicts.set(c, oneLine(reason, 1000));
  };
  /** Refuses `c` for an error thrown on its way; the error itself goes to `result.errors`. */
  const fail = (c: PushCommand, what: string, error: unknown) => {
    if (signal?.aborted || hasCode(error, 'PROTOCOL_ABORTED')) throw error;
    errors.push(error);
    reject(c, `${what}: ${peerErrorMessage(error)}`);
  };
  const atomic = caps.has('atomic');
  let migration: Migration | undefined;
  let refsBefore: Ref[] | undefined;
  try {
    let currentBranch: string | undefined;
    let headUnknown = false;
    if (!options.allowDeleteCurrent && commands.some((c) => c.new === null)) {
      try {
        const head = await repo.refs.read('HEAD');
        currentBranch = head.kind === 'symbolic' ? head.target : undefined;
      } catch (error) {
        errors.push(error);
        headUnknown = true;
      }
    }
    const counts = new Map<string, number>();
    for (const c of commands) counts.set(c.name, (counts.get(c.name) ?? 0) + 1);
    for (const c of commands) {
      if (!c.name.startsWith('refs/') || !isValidRefName(c.name)) reject(c, 'funny refname');
      // which of two updates of one ref was meant is anyone's guess: neither is applied
      else if ((counts.get(c.name) ?? 0) > 1) reject(c, 'duplicate ref');
      else if (c.new === null && options.allowDeletes === false) reject(c, 'deletion prohibited');
      else if (c.new === null && (c.name === currentBranch || headUnknown))
        reject(c, 'deletion of the current branch prohibited');
      else if (c.new === null && c.old === null) reject(c, 'no such ref');
    }
    // every new tip and its closure must be there (in the pack, or reachable from a ref)
    const tips = commands.filter((c) => c.new !== null && !verdicts.has(c));
    if (tips.length > 0) {
      try {
        const refTips = (await repo.refs.list()).map((r) => r.oid);
        const check = new ConnectivityCheck(objects, graph, refTips, pushed, signal);
        const all = [...new Set(tips.map((c) => c.new as ObjectId))];
        // one walk for every tip; only when it fails, one per tip to tell which
        if ((await check.check(all)) !== undefined) {
          for (const c of tips) {
            const problem = await check.check([c.new as ObjectId]);
            if (problem?.kind === 'missing') reject(c, 'missing necessary objects');
            else if (problem) reject(c, `invalid object ${problem.oid}: ${problem.id}: ${problem.message}`);
          }
        }
      } catch (error) {
        for (const c of tips) fail(c, 'missing necessary objects', error);
      }
    }
    // git refuses to point a branch at anything but a commit
    for (const c of commands) {
      if (verdicts.has(c) || c.new === null || !c.name.startsWith('refs/heads/')) continue;
      try {
        const type = objects.readHeader ? (await objects.readHeader(c.new))?.type : (await objects.read(c.new))?.type;
        if (type !== 'commit') reject(c, `failed to update ref: trying to write non-commit object ${c.new} to branch`);
      } catch (error) {
        fail(c, 'failed to update ref', error);
      }
    }
    // compare the claimed old values with the store (the transaction checks again, atomically)
    for (const c of commands) {
      if (verdicts.has(c)) continue;
      try {
        const current = await repo.refs.read(c.name);
        const currentOid = current.kind === 'direct' ? current.oid : null;
        if (current.kind === 'symbolic') reject(c, 'cannot update a symbolic ref');
        else if (currentOid !== c.old) reject(c, currentOid === null && c.new === null ? 'no such ref' : 'stale info');
      } catch (error) {
        fail(c, 'failed to lock', error);
      }
    }
    if (options.allowNonFastForward === false) {
      for (const c of commands) {
        if (verdicts.has(c) || c.old === null || c.new === null) continue;
        try {
          const oldCommit = await graph.commit(c.old);
          const newCommit = await graph.commit(c.new);
          if (!oldCommit || !newCommit) continue; // not commits: nothing to fast-forward
          const found = await graph.reachableFrom([c.old], [c.new], signal);
          if (!found.has(c.old)) reject(c, 'non-fast-forward');
        } catch (error) {
          fail(c, 'non-fast-forward', error);
        }
      }
    }
    if (options.hooks?.update) {
      for (const c of commands) {
        if (verdicts.has(c)) continue;
        try {
          const reason = await options.hooks.update(c, objects);
          if (typeof reason === 'string') reject(c, `hook declined: ${reason}`);
        } catch (error) {
          fail(c, 'hook declined', error);
        }
      }
    }
    if (atomic && verdicts.size > 0) {
      for (const c of commands) reject(c, 'atomic push failure');
    }
    const accepted = commands.filter((c) => !verdicts.has(c));
    if (accepted.length > 0 && options.hooks?.preReceive) {
      try {
        const reason = await options.hooks.preReceive(accepted, result.pushOptions, objects);
        if (typeof reason === 'string') for (const c of accepted) reject(c, `pre-receive hook declined: ${reason}`);
      } catch (error) {
        for (const c of accepted) fail(c, 'pre-receive hook declined', error);
      }
    }
    throwIfAborted(signal);
    const toApply = commands.filter((c) => !verdicts.has(c));
    if (toApply.length > 0) {
      // the objects go into the repository before any ref may point at them
      if (quarantine) {
        try {
          // what the refs were, for taking the objects out again should every ref be refused
          if (quarantine.incoming.size > 0) refsBefore = await repo.refs.list();
          migration = await quarantine.migrate();
        } catch (error) {
          for (const c of toApply) fail(c, 'unable to migrate objects to permanent storage', error);
        }
      }
    }
    const applying = commands.filter((c) => !verdicts.has(c));
    if (applying.length > 0) {
      const updates: RefUpdate[] = applying.map((c) => ({ name: c.name, old: c.old, new: c.new }));
      try {
        const applied = await repo.refs.update(updates, { atomic });
        applying.forEach((c, i) => {
          const r = applied[i];
          if (!r) reject(c, 'failed to update ref');
          else if (r.status === 'rejected')
            reject(c, r.reason === 'stale' ? 'stale info' : `failed to update ref: ${oneLine(r.message, 500)}`);
        });
      } catch (error) {
        for (const c of applying) fail(c, 'failed to update ref', error);
      }
    }
  } catch (error) {
    // a failure outside the steps above: every command not decided yet is refused
    for (const c of commands) fail(c, 'internal error', error);
  }
  if (atomic && verdicts.size > 0) for (const c of commands) reject(c, 'atomic push failure');
  result.commands = commands.map((c) => {
    const reason = verdicts.get(c);
    return reason === undefined ? { ...c, status: 'ok' } : { ...c, status: 'rejected', reason };
  });
  result.updated = commands.filter((c) => !verdicts.has(c));
  if (errors.length > 0) result.errors = errors;
  if (migration && refsBefore && result.updated.length === 0) await revertUnused(repo, migration, refsBefore, result);
}

/**
 * Every ref was refused after the pack was migrated: its objects leave the repository again, as
 * if quarantined, unless another writer may lean on them: some ref moved since just before the
 * migration (it may point at them, or at objects that do), or another push is still in its
 * checks (`Migration.revert` keeps them then). Kept objects are unreachable garbage, as git
 * leaves them.
 */
async function revertUnused(
  repo: Repository,
  migration: Migration,
  before: readonly Ref[],
  result: ReceivePackResult,
): Promise<void> {
  if (migration.added.size === 0) return;
  try {
    const now = await repo.refs.list();
    const same =
      now.length === before.length && now.every((r, i) => r.name === before[i]?.name && r.oid === before[i]?.oid);
    if (!same) return;
    await migration.revert();
  } catch (error) {
    (result.errors ??= []).push(error);
  }
}

/** receive.fsckObjects: every pushed commit, tree and tag passes git's fsck checks. */
async function fsckPushed(
  objects: ObjectStore,
  sent: readonly ObjectId[],
  types: ReadonlyMap<ObjectId, ObjectType>,
  signal: AbortSignal | undefined,
): Promise<void> {
  let steps = 0;
  for (const oid of sent) {
    if (types.get(oid) === 'blob') continue;
    if ((++steps & 1023) === 0) throwIfAborted(signal);
    const object = await objects.read(oid);
    if (!object) throw new ProtocolError('PROTOCOL_BAD_OBJECT', `object ${oid} is missing from the pack`);
    const verdict = checkObject(object.type, object.data, { fsck: true });
    if (!verdict.ok) {
      throw new ProtocolError('PROTOCOL_BAD_OBJECT', `object ${oid}: ${verdict.id}: ${verdict.message}`, {
        data: { oid, id: verdict.id },
      });
    }
  }
}

async function report(conn: Connection, caps: Capabilities, result: ReceivePackResult): Promise<void> {
  if (!caps.has('report-status') && !caps.has('report-status-v2')) return;
  const parts: Uint8Array[] = [line(`unpack ${result.unpack}`)];
  for (const c of result.commands) {
    parts.push(line(c.status === 'ok' ? `ok ${c.name}` : `ng ${c.name} ${c.reason}`));
  }
  parts.push(FLUSH);
  const body = concatBytes(parts);
  if (caps.has('side-band-64k')) {
    const muxer = new SidebandMuxer((b) => conn.write(b), { maxData: 65515 });
    await muxer.data(body);
    await muxer.flush();
  } else {
    await conn.write(body);
  }
}
