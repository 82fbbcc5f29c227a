/**
 * The protocol v2 `object-info` command (gitprotocol-v2): the size of objects by id, so a client
 * of a partial clone can learn sizes without fetching.
 *
 *   request  = command=object-info ... delim-pkt ["size"] *("oid" SP obj-id) flush-pkt
 *   response = PKT-LINE("size") *PKT-LINE(obj-id SP obj-size) flush-pkt
 *
 * As git's server, an object it does not have is answered `<obj-id> ` with no size, and only
 * objects of the repository are ever looked at (the answer says nothing of refs).
 */

import type { ObjectId, ObjectStore } from '@gitport/pack';
import { FLUSH } from '@gitport/pktline';
import { encodeTextLines } from './advertisement.js';
import type { Connection } from './connection.js';
import { ProtocolError } from './errors.js';
import { isObjectId } from './ref-store.js';

/** Most `oid` lines one request may carry. */
export const MAX_OBJECT_INFO_IDS = 100_000;

export async function objectInfo(
  store: ObjectStore,
  conn: Connection,
  args: AsyncIterable<string>,
  maxIds = MAX_OBJECT_INFO_IDS,
): Promise<void> {
  let size = false;
  const oids: ObjectId[] = [];
  for await (const arg of args) {
    if (arg === 'size') size = true;
    else if (arg.startsWith('oid ')) {
      const oid = arg.slice(4);
      if (!isObjectId(oid))
        throw new ProtocolError(
          'PROTOCOL_BAD_LINE',
          `object-info: protocol error, expected to get oid, not '${oid.slice(0, 80)}'`,
        );
      if (oids.length >= maxIds) throw new ProtocolError('PROTOCOL_LIMIT', `object-info: more than ${maxIds} oids`);
      oids.push(oid);
    } else throw new ProtocolError('PROTOCOL_BAD_LINE', `object-info: unexpected argument ${JSON.stringify(arg)}`);
  }
  const lines: string[] = [];
  if (size) lines.push('size\n');
  for (const oid of oids) {
    if (!size) {
      lines.push(`${oid}\n`);
      continue;
    }
    const header = store.readHeader ? await store.readHeader(oid) : await store.read(oid);
    const bytes = header === undefined ? undefined : 'size' in header ? header.size : header.data.length;
    lines.push(bytes === undefined ? `${oid} \n` : `${oid} ${bytes}\n`);
  }
  if (lines.length > 0) await conn.write(encodeTextLines(lines));
  await conn.write(FLUSH);
}
