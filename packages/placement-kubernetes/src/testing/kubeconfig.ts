// A kubeconfig for the test server: one cluster, one bearer-token user, one context (JSON, which every
// kubeconfig loader reads as YAML).

export interface KubeconfigOptions {
  server: string;
  /** The PEM certificate the server presents (trusted as the cluster's CA). */
  certificate: string;
  token: string;
  namespace?: string;
  name?: string;
}

export function kubeconfigFor(options: KubeconfigOptions): string {
  const name = options.name ?? 'everdict-test';
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name,
          cluster: {
            server: options.server,
            'certificate-authority-data': Buffer.from(options.certificate).toString('base64'),
          },
        },
      ],
      users: [{ name, user: { token: options.token } }],
      contexts: [{ name, context: { cluster: name, user: name, namespace: options.namespace ?? 'default' } }],
      'current-context': name,
      preferences: {},
    },
    null,
    2,
  );
}
