// Loaded into the testbed's Node.js peers with NODE_OPTIONS=--require: the
// process may open connections to loopback only. A peer that tries to reach
// another host (Verdaccio's audit middleware forwards to a hard-coded public
// registry) gets a connection error instead, so testbed runs never leave the
// machine; the suite sees the peer's answer to that error.
'use strict';
const dns = require('dns');
const net = require('net');

const LOOPBACK_NAMES = new Set(['localhost', '::1', '[::1]']);
function isLoopback(host) {
  const h = String(host);
  return LOOPBACK_NAMES.has(h) || (net.isIPv4(h) && h.startsWith('127.'));
}

function refused(what) {
  const err = new Error(`${what}: this process may connect to loopback only (testbed)`);
  err.code = 'ECONNREFUSED';
  return err;
}

const lookup = dns.lookup;
dns.lookup = function guardedLookup(hostname, options, callback) {
  const cb = typeof options === 'function' ? options : callback;
  if (!isLoopback(hostname)) {
    process.nextTick(cb, refused(`lookup ${hostname}`));
    return {};
  }
  return lookup.apply(dns, arguments);
};

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  let first = args[0];
  if (Array.isArray(first)) first = first[0];
  const options = first && typeof first === 'object' ? first : null;
  if (options && options.path) return connect.apply(this, args);
  const host = options ? options.host : typeof args[1] === 'string' ? args[1] : undefined;
  if (host !== undefined && net.isIP(String(host)) && !isLoopback(host)) {
    process.nextTick(() => this.destroy(refused(`connect ${host}`)));
    return this;
  }
  return connect.apply(this, args);
};
