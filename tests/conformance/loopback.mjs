// Preloaded (node --import) into every Node process the conformance tests start: a listen() that
// names no host binds 127.0.0.1 instead of every interface, so the suite's scenario servers and
// server-everything stay on loopback (finmcp's tests never listen beyond it). It patches the
// internal _listen2 (setupListenHandle), where Node binds synchronously, because adding a host to
// listen() makes the bind wait for a DNS lookup and the suite reads address() right after listen().
import net from 'node:net';

const setupListenHandle = net.Server.prototype._listen2;
net.Server.prototype._listen2 = function (address, port, addressType, ...rest) {
  if (!address || address === '::' || address === '0.0.0.0') {
    return setupListenHandle.call(this, '127.0.0.1', port, 4, ...rest);
  }
  return setupListenHandle.call(this, address, port, addressType, ...rest);
};
