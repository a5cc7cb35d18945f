// Seed 004's server: the same three endpoints and handlers, on Node's own
// http module instead of Express (no packages to fetch at image build time;
// Express only adds routing and headers in front of the same handlers).
//
//   node app.js              listens on 0.0.0.0:$PORT (default 3000)
//
// /network   a constant short answer
// /disk-io   writes testfile.txt in the working directory, reads it back
// /cpu       1e5 SHA-256 hashes of "test"
'use strict';
const http = require('http');
const fs = require('fs');
const crypto = require('crypto');

function send(res, status, body) {
  // What Express's res.send puts on a string body.
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

const routes = {
  '/network': (req, res) => {
    send(res, 200, 'Network endpoint response');
  },

  '/disk-io': (req, res) => {
    const filePath = 'testfile.txt';
    const fileContent = 'Some content to write to the file';

    fs.writeFile(filePath, fileContent, (err) => {
      if (err) {
        send(res, 500, 'Error writing file');
        return;
      }

      fs.readFile(filePath, 'utf8', (err, data) => {
        if (err) {
          send(res, 500, 'Error reading file');
          return;
        }

        send(res, 200, `File content: ${data}`);
      });
    });
  },

  '/cpu': (req, res) => {
    const start = Date.now();

    for (let i = 0; i < 1e5; i++) {
      crypto.createHash('sha256').update('test').digest('hex');
    }

    const end = Date.now();
    send(res, 200, `CPU intensive task completed in ${end - start} ms`);
  },
};

const server = http.createServer((req, res) => {
  const route = req.method === 'GET' && routes[req.url.split('?')[0]];
  if (route) {
    route(req, res);
  } else {
    send(res, 404, 'Not found');
  }
});

const port = Number(process.env.PORT || 3000);
server.listen(port, '0.0.0.0', () => {
  console.log(`listening on 0.0.0.0:${port} (node ${process.version})`);
});
process.on('SIGTERM', () => process.exit(0));
