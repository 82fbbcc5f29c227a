/**
 * SSE subscribers for the soak test, in a process of their own (child_process.fork). Opens
 * `readers` event streams that read everything and `idle` ones that never read after the
 * headers (a stalled browser tab), and counts what the readers get. Messages from the parent:
 *   { type: 'open', url, readers, idle }  -> { type: 'opened', refused }
 *   { type: 'report' }                    -> { type: 'report', events, resets, ended, errors }
 */
import { request } from 'node:http';

const counts = { events: 0, resets: 0, ended: 0, errors: 0 };

function open(url, read) {
  return new Promise((resolve) => {
    const req = request(url, { headers: { accept: 'text/event-stream' }, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        resolve(false);
        return;
      }
      res.on('end', () => counts.ended++);
      res.on('error', () => counts.errors++);
      if (!read) {
        // a stalled reader: take the headers, then never read again
        res.pause();
        resolve(true);
        return;
      }
      res.setEncoding('utf8');
      let pending = '';
      res.on('data', (chunk) => {
        pending += chunk;
        let end = pending.indexOf('\n\n');
        while (end >= 0) {
          const frame = pending.slice(0, end);
          pending = pending.slice(end + 2);
          if (/^event: ref-update$/m.test(frame)) counts.events++;
          else if (/^event: reset$/m.test(frame)) counts.resets++;
          end = pending.indexOf('\n\n');
        }
      });
      resolve(true);
    });
    req.on('error', () => {
      counts.errors++;
      resolve(false);
    });
    req.end();
  });
}

process.on('message', async (message) => {
  if (message.type === 'open') {
    let refused = 0;
    for (let i = 0; i < message.readers + message.idle; i++) {
      if (!(await open(message.url, i < message.readers))) refused++;
    }
    process.send({ type: 'opened', refused });
  } else if (message.type === 'report') {
    process.send({ type: 'report', ...counts });
  }
});
