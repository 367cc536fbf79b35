// A container's log, as the kubelet's json-file logger keeps it: stdout and stderr interleaved, each chunk
// timestamped, readable whole or followed until the container stops.

export interface LogChunk {
  at: Date;
  data: Buffer;
}

export interface LogQuery {
  timestamps: boolean;
  tailLines: number | undefined;
  limitBytes: number | undefined;
  sinceTime: Date | undefined;
}

type Follower = (chunk: LogChunk | null) => void;

export class LogBuffer {
  private readonly chunks: LogChunk[] = [];
  private readonly followers = new Set<Follower>();
  private ended = false;

  append(data: Buffer): void {
    if (data.length === 0) return;
    const chunk = { at: new Date(), data };
    this.chunks.push(chunk);
    for (const f of this.followers) f(chunk);
  }

  /** The container stopped: followers see the end of the stream. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const f of this.followers) f(null);
    this.followers.clear();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** What is there now, filtered and rendered as the log endpoint renders it. */
  read(query: LogQuery): Buffer {
    let lines = this.lines(
      this.chunks.filter((c) => !query.sinceTime || c.at >= query.sinceTime),
      query,
    );
    if (query.tailLines !== undefined) lines = lines.slice(Math.max(0, lines.length - query.tailLines));
    const out = Buffer.concat(lines);
    return query.limitBytes !== undefined ? out.subarray(0, query.limitBytes) : out;
  }

  /** Chunks appended from now on; `null` marks the end. Returns the unsubscribe function. */
  follow(follower: Follower): () => void {
    if (this.ended) {
      follower(null);
      return () => {};
    }
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }

  /** Render chunks as lines, each prefixed with its RFC 3339 time when asked. */
  render(chunks: LogChunk[], query: Pick<LogQuery, 'timestamps'>): Buffer {
    return Buffer.concat(this.lines(chunks, query));
  }

  private lines(chunks: LogChunk[], query: Pick<LogQuery, 'timestamps'>): Buffer[] {
    const lines: Buffer[] = [];
    for (const chunk of chunks) {
      let start = 0;
      while (start < chunk.data.length) {
        const nl = chunk.data.indexOf(10, start);
        const end = nl === -1 ? chunk.data.length : nl + 1;
        const line = chunk.data.subarray(start, end);
        lines.push(
          query.timestamps ? Buffer.concat([Buffer.from(`${chunk.at.toISOString()} `), line]) : line,
        );
        start = end;
      }
    }
    return lines;
  }
}
