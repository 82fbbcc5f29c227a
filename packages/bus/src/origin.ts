/**
 * Origin patterns, decided in linear time without regular expressions.
 *
 * An origin is what a browser reports on a message event (RFC 6454 serialisation):
 *   origin  = scheme "://" host [ ":" port ]      e.g. https://a.example.com:8443
 * A pattern is an exact origin, or one whose host has `*` labels, where `*` stands for exactly one
 * non-empty DNS label (letters, digits, hyphens):
 *   https://*.example.com   matches https://a.example.com
 *                           not https://evilexample.com, https://.example.com, https://a.b.example.com
 * The single pattern `*` matches every origin (only when given explicitly). Scheme and port must match
 * exactly; comparison is case-insensitive (browsers serialise origins in lowercase anyway).
 */
import { BusError } from './errors.js';

interface WildcardPattern {
  scheme: string;
  labels: (string | null)[]; // null = one wildcard label
  port: string;
}

function splitOrigin(origin: string): { scheme: string; host: string; port: string } | undefined {
  const sep = origin.indexOf('://');
  if (sep <= 0) return undefined;
  const scheme = origin.slice(0, sep);
  let rest = origin.slice(sep + 3);
  if (rest.length === 0 || rest.includes('/') || rest.includes('?') || rest.includes('#') || rest.includes('@')) {
    return undefined;
  }
  let port = '';
  const colon = rest.lastIndexOf(':');
  if (colon !== -1 && !rest.endsWith(']')) {
    port = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (port.length === 0 || port.length > 5) return undefined;
    for (let i = 0; i < port.length; i++) {
      const c = port.charCodeAt(i);
      if (c < 48 || c > 57) return undefined;
    }
  }
  if (rest.length === 0) return undefined;
  return { scheme, host: rest, port };
}

function isLabel(label: string): boolean {
  if (label.length === 0 || label.length > 63) return false;
  for (let i = 0; i < label.length; i++) {
    const c = label.charCodeAt(i);
    const ok = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45 || c === 95;
    if (!ok) return false;
  }
  return true;
}

/**
 * Compiles origin patterns into a predicate. Throws BusError `BUS_INVALID_ORIGIN` for a malformed
 * pattern (a `*` that is not a whole label, a path, no scheme, ...).
 */
export function originMatcher(patterns: readonly string[]): (origin: string) => boolean {
  const exact = new Set<string>();
  const wildcards: WildcardPattern[] = [];
  let any = false;
  for (const raw of patterns) {
    if (typeof raw !== 'string') throw new BusError('BUS_INVALID_ORIGIN', 'an origin pattern must be a string');
    const pattern = raw.toLowerCase();
    if (pattern === '*') {
      any = true;
      continue;
    }
    const parts = splitOrigin(pattern);
    if (parts === undefined) throw new BusError('BUS_INVALID_ORIGIN', `invalid origin pattern: ${JSON.stringify(raw)}`);
    if (!pattern.includes('*')) {
      exact.add(pattern);
      continue;
    }
    if (parts.scheme.includes('*') || parts.port.includes('*')) {
      throw new BusError('BUS_INVALID_ORIGIN', `a wildcard may only stand for host labels: ${JSON.stringify(raw)}`);
    }
    const labels = parts.host.split('.').map((label) => {
      if (label === '*') return null;
      if (!isLabel(label)) {
        throw new BusError('BUS_INVALID_ORIGIN', `"*" must be a whole DNS label: ${JSON.stringify(raw)}`);
      }
      return label;
    });
    wildcards.push({ scheme: parts.scheme, labels, port: parts.port });
  }
  if (any) return () => true;
  if (wildcards.length === 0) return (origin) => typeof origin === 'string' && exact.has(origin.toLowerCase());
  return (origin) => {
    if (typeof origin !== 'string' || origin.length > 2048) return false;
    const lower = origin.toLowerCase();
    if (exact.has(lower)) return true;
    const parts = splitOrigin(lower);
    if (parts === undefined) return false;
    const labels = parts.host.split('.');
    for (const pattern of wildcards) {
      if (pattern.scheme !== parts.scheme || pattern.port !== parts.port) continue;
      if (pattern.labels.length !== labels.length) continue;
      let ok = true;
      for (let i = 0; i < labels.length && ok; i++) {
        const want = pattern.labels[i];
        ok = want === null ? isLabel(labels[i]!) : want === labels[i];
      }
      if (ok) return true;
    }
    return false;
  };
}
