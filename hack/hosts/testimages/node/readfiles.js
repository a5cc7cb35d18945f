// Seed 003's workload: read every file of a directory of many small text
// files, as a serverless function reading its posts would, in one of three
// ways:
//
//   sequential   await fs.promises.readFile for one file after the other
//   async        Promise.all over fs.promises.readFile of every file (libuv's
//                thread pool does the I/O, the main thread the rest)
//   workers      N worker_threads, each given an equal slice of the files and
//                reading it with Promise.all, as the seed's four workers did
//
//   node readfiles.js DIR MODE [WORKERS]
//
// Prints one JSON line: the time from the first read (for workers: from
// creating them) to the last file read, files/s, MB/s, the process's CPU
// time over that span and, in a container whose CPU is limited, how long the
// CFS quota throttled it (from the cgroup's cpu.stat).
'use strict';
const fs = require('fs');
const path = require('path');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

async function readAll(dir, files) {
  const texts = await Promise.all(files.map((f) => fs.promises.readFile(path.join(dir, f), 'utf8')));
  let chars = 0;
  for (const t of texts) chars += t.length;
  return chars;
}

if (!isMainThread) {
  readAll(workerData.dir, workerData.files).then((chars) => parentPort.postMessage(chars));
  return;
}

function cpuStat() {
  // cgroup v1 (cpu controller), then v2; throttled time in ns (v1) or us (v2)
  for (const [file, key, scale] of [
    ['/sys/fs/cgroup/cpu/cpu.stat', 'throttled_time', 1e-9],
    ['/sys/fs/cgroup/cpu.stat', 'throttled_usec', 1e-6],
  ]) {
    try {
      const m = fs.readFileSync(file, 'utf8').match(new RegExp(`^${key} (\\d+)$`, 'm'));
      const p = fs.readFileSync(file, 'utf8').match(/^nr_throttled (\d+)$/m);
      if (m) return { throttled_s: Number(m[1]) * scale, nr_throttled: p ? Number(p[1]) : null };
    } catch (e) {
      // not this layout
    }
  }
  return null;
}

async function sequential(dir, files) {
  let chars = 0;
  for (const f of files) {
    chars += (await fs.promises.readFile(path.join(dir, f), 'utf8')).length;
  }
  return chars;
}

function workers(dir, files, n) {
  const per = Math.ceil(files.length / n);
  const runs = [];
  for (let i = 0; i < n; i++) {
    const slice = files.slice(i * per, (i + 1) * per);
    runs.push(new Promise((resolve, reject) => {
      const w = new Worker(__filename, { workerData: { dir, files: slice } });
      w.once('message', resolve);
      w.once('error', reject);
    }));
  }
  return Promise.all(runs).then((counts) => counts.reduce((a, b) => a + b, 0));
}

async function main() {
  const [dir, mode, nArg] = process.argv.slice(2);
  const n = Number(nArg || 4);
  if (!dir || !['sequential', 'async', 'workers'].includes(mode) || !(n >= 1)) {
    console.error('usage: node readfiles.js DIR sequential|async|workers [WORKERS]');
    process.exit(2);
  }
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.txt')).sort();
  const bytes = files.reduce((a, f) => a + fs.statSync(path.join(dir, f)).size, 0);
  const cg0 = cpuStat();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let chars;
  if (mode === 'sequential') chars = await sequential(dir, files);
  else if (mode === 'async') chars = await readAll(dir, files);
  else chars = await workers(dir, files, n);
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cg1 = cpuStat();
  if (chars !== bytes) {
    console.error(`read ${chars} characters of ${bytes} bytes`);
    process.exit(1);
  }
  console.log(JSON.stringify({
    mode,
    workers: mode === 'workers' ? n : 0,
    files: files.length,
    bytes,
    elapsed_s: Number(elapsed.toFixed(4)),
    files_per_s: Number((files.length / elapsed).toFixed(1)),
    mb_per_s: Number((bytes / 1e6 / elapsed).toFixed(2)),
    cpu_s: Number(((cpu.user + cpu.system) / 1e6).toFixed(4)),
    throttled_s: cg0 && cg1 ? Number((cg1.throttled_s - cg0.throttled_s).toFixed(4)) : null,
    nr_throttled: cg0 && cg1 && cg1.nr_throttled !== null ? cg1.nr_throttled - cg0.nr_throttled : null,
    threadpool: Number(process.env.UV_THREADPOOL_SIZE || 4),
    node: process.version,
  }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
