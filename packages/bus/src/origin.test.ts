import { describe, expect, it } from 'vitest';
import { originMatcher } from './index.js';

describe('originMatcher', () => {
  it('matches exact origins, case-insensitively, with ports', () => {
    const match = originMatcher(['https://app.example.com', 'http://localhost:8080']);
    expect(match('https://app.example.com')).toBe(true);
    expect(match('HTTPS://APP.EXAMPLE.COM')).toBe(true);
    expect(match('http://localhost:8080')).toBe(true);
    expect(match('http://localhost')).toBe(false);
    expect(match('https://app.example.com:443')).toBe(false);
    expect(match('null')).toBe(false);
    expect(match('')).toBe(false);
  });

  it('lets * stand for exactly one DNS label', () => {
    const match = originMatcher(['https://*.example.com']);
    expect(match('https://a.example.com')).toBe(true);
    expect(match('https://a-b9.example.com')).toBe(true);
    expect(match('https://evilexample.com')).toBe(false);
    expect(match('https://.example.com')).toBe(false);
    expect(match('https://a.b.example.com')).toBe(false);
    expect(match('https://example.com')).toBe(false);
    expect(match('http://a.example.com')).toBe(false);
    expect(match('https://a.example.com:8443')).toBe(false);
    expect(match('https://a.example.com.evil.com')).toBe(false);
    expect(match('https://a.example.com/path')).toBe(false);
    expect(match('https://user@a.example.com')).toBe(false);
    expect(match('https://a%2eb.example.com')).toBe(false);
  });

  it('supports several wildcards and ports in patterns', () => {
    const match = originMatcher(['https://*.*.example.com:8443']);
    expect(match('https://a.b.example.com:8443')).toBe(true);
    expect(match('https://a.example.com:8443')).toBe(false);
    expect(match('https://a.b.example.com')).toBe(false);
  });

  it('matches anything only for an explicit "*"', () => {
    expect(originMatcher(['*'])('https://anything.test')).toBe(true);
    expect(originMatcher([])('https://anything.test')).toBe(false);
  });

  it('refuses malformed patterns with a typed error', () => {
    for (const bad of ['https://a*.example.com', 'example.com', 'https://x.com/path', '*://a.com', 'https://a.com:*']) {
      expect(() => originMatcher([bad]), bad).toThrow(expect.objectContaining({ code: 'BUS_INVALID_ORIGIN' }));
    }
  });

  it('decides ReDoS probes without backtracking', () => {
    const match = originMatcher(['https://*.*.*.*.*.*.example.com']);
    const probes = [
      `https://${'a.'.repeat(124)}example.co`,
      `https://${'a'.repeat(240)}.example.com`,
      `https://${'a.'.repeat(6)}${'-'.repeat(230)}`,
      `https://${'.'.repeat(245)}`,
    ];
    // A backtracking matcher takes exponential time on these (the test would hang); ours walks each once.
    probes.push(`https://${'a.'.repeat(900)}example.co`, `https://${'a-'.repeat(1000)}.example.com`);
    for (const probe of probes) expect(match(probe)).toBe(false);
    expect(match(`https://${'a.'.repeat(6)}example.com`)).toBe(true);
  });
});
