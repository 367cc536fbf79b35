// The serving certificate: self-signed for 127.0.0.1 and localhost, and its own CA (clients trust it through
// the kubeconfig's certificate-authority-data). TLS matters beyond realism: client-go (kubectl) never sends a
// bearer token over plain HTTP.
import { generate } from 'selfsigned';

export interface ServingCertificate {
  key: string;
  cert: string;
}

export async function servingCertificate(): Promise<ServingCertificate> {
  const pems = await generate([{ name: 'commonName', value: 'everdict-test-apiserver' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' },
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}
