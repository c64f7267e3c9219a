// A Node.js HTTP server with the runtime's default listen(port): an
// AF_INET6 dual-stack socket on "::" (test/integration/preload_dualstack.sh,
// share_kernel.sh). Usage: node hello_server.js PORT BODY
const http = require('http');
const [port, body] = process.argv.slice(2);
http.createServer((q, r) => r.end(body + '\n')).listen(Number(port), () => console.log('listening'));
