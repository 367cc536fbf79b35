// Pairing an agent host with the control plane, as a runner pairs: a pairing token (a tenant admin's
// `POST /runners/pairing-tokens`, or the operator's `POST /internal/runners/pairing-tokens` with the service
// token → a shared host) redeemed at `POST /agents/hosts/pair` with the host's public key and its proof of
// holding the key (the key's signature of `everdict-agent-host-pair/1\n<sha256(token)>\n<publicKey>`,
// @everdict/client/host-identity `pairingSignature`) → its host id, which is then its lease holder name. The
// key stays in the state directory (host-key.ts).
import { createClient, dataOf } from '@everdict/client';
import {
  AGENT_HOST_PAIRING_PROOF_TAG,
  pairingSignature,
  replaceSigningKey,
} from '@everdict/client/host-identity';
import type { SigningKey } from '@everdict/runrecord';
import { AgentError } from '../errors.js';
import { call } from '../http/refusals.js';
import {
  type HostPairing,
  type IntervalSigner,
  intervalSigner,
  loadOrCreateKey,
  loadPairing,
  savePairing,
} from './host-key.js';

/** Redeem `token` for this host's key (made on first use); the pairing is saved in `dir`. */
export async function pairHost(o: {
  url: string;
  token: string;
  name: string;
  dir: string;
}): Promise<HostPairing> {
  const key = await loadOrCreateKey(o.dir);
  const client = createClient({ baseUrl: o.url });
  const out = await call(async () =>
    dataOf(
      await client.POST('/agents/hosts/pair', {
        body: {
          token: o.token,
          publicKey: key.publicKey,
          signature: pairingSignature(key, o.token, AGENT_HOST_PAIRING_PROOF_TAG),
          name: o.name,
        },
      }),
    ),
  );
  const pairing: HostPairing = { url: o.url, hostId: out.hostId, publicKey: key.publicKey, name: o.name };
  await savePairing(o.dir, pairing);
  return pairing;
}

/** A shared pairing token, minted with the service token (the operator's door). */
export async function mintSharedToken(url: string, serviceToken: string): Promise<string> {
  const client = createClient({ baseUrl: url, token: serviceToken });
  const out = await call(async () =>
    dataOf(await client.POST('/internal/runners/pairing-tokens', { body: {} })),
  );
  return out.token;
}

/** Who this process is to the control plane: its host id (the lease holder) and its interval signer. */
export interface HostIdentity {
  readonly hostId: string;
  readonly publicKey: string;
  readonly signer: IntervalSigner;
}

/**
 * The paired identity in `dir`, checked against the control plane's `GET /keys` (listed, not revoked). No
 * pairing (or one this control plane does not list): with `autoPair` (the service token) the host pairs now;
 * else null when it never paired (the control plane then seals its intervals with its own key) and
 * `not_paired` when its pairing is unknown here. A key names one identity, ever (a pairing refuses a key the
 * control plane lists, a revoked host's too): when this host's key is listed already — its host revoked, or
 * paired with another ledger this state directory also served — `autoPair` pairs with a new key, as the
 * control plane's embedded runner does (the old identity's records still verify with the old key, listed).
 */
export async function hostIdentity(o: {
  url: string;
  dir: string;
  name: string;
  autoPair?: { serviceToken: string } | undefined;
}): Promise<HostIdentity | null> {
  const saved = await loadPairing(o.dir);
  if (!saved && !o.autoPair) return null; // never paired: no key is made either
  const key = await loadOrCreateKey(o.dir);
  const identity = (p: HostPairing, k: SigningKey): HostIdentity => ({
    hostId: p.hostId,
    publicKey: k.publicKey,
    signer: intervalSigner(k),
  });
  const client = createClient({ baseUrl: o.url });
  const { keys } = await call(async () => dataOf(await client.GET('/keys')));
  if (saved && saved.publicKey === key.publicKey) {
    const mine = keys.find(
      (k) => k.kind === 'agent-host' && k.id === saved.hostId && k.key === key.publicKey,
    );
    if (mine && !mine.revokedAt) return identity(saved, key);
  }
  if (o.autoPair) {
    const listed = keys.some((k) => k.key === key.publicKey);
    const fresh = listed ? await replaceSigningKey(o.dir) : key;
    const token = await mintSharedToken(o.url, o.autoPair.serviceToken);
    return identity(await pairHost({ url: o.url, token, name: o.name, dir: o.dir }), fresh);
  }
  throw new AgentError(
    'not_paired',
    `the pairing in ${o.dir} (host ${saved?.hostId}) is not a live agent host of ${o.url}: pair again`,
  );
}
