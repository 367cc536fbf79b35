// The public keys a verifier may trust, as GET /keys lists them: the control plane's own key first, then
// whatever other sources add (a runner registry appends `{kind: 'runner', …}` entries through `addSource`).
import type { Hex } from '@everdict/runrecord';
import type { Signer } from './signer.js';

export interface PublicKeyEntry {
  kind: 'control-plane' | 'runner' | 'agent-host';
  /** Stable id: `control-plane` for this control plane's key; a runner's (agent host's) id for its key. */
  id: string;
  name?: string;
  /** Ed25519 public key, 64 lowercase hex. */
  key: Hex;
  /** ISO time the key stopped being trusted for new intervals (absent: active). */
  revokedAt?: string;
}

export type KeySource = () => Promise<readonly PublicKeyEntry[]>;

export class KeyRing {
  private readonly sources: KeySource[] = [];
  constructor(readonly signer: Signer) {}

  /** Another source of keys (e.g. registered runners); listed after the control plane's own. */
  addSource(source: KeySource): void {
    this.sources.push(source);
  }

  async list(): Promise<PublicKeyEntry[]> {
    const own: PublicKeyEntry = { kind: 'control-plane', id: 'control-plane', key: this.signer.publicKey };
    const rest = await Promise.all(this.sources.map((s) => s()));
    return [own, ...rest.flat()];
  }
}
