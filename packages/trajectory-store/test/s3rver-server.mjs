// An s3rver (the S3 stand-in for tests) in its own process, with the OpenSSL legacy provider its
// continuation tokens need: `node --openssl-legacy-provider s3rver-server.mjs <dir> <bucket>`.
// Prints `PORT <n>` once listening; stops on SIGTERM or when stdin closes.
import S3rver from 's3rver';

const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory,
  silent: true,
  configureBuckets: [{ name: bucket }],
});
const { port } = await server.run();
process.stdout.write(`PORT ${port}\n`);
const stop = () => server.close().finally(() => process.exit(0));
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
