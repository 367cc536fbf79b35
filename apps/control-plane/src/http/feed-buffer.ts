// What a live feed delivered that an SSE stream has not written yet (`GET /runs/:id/events`,
// `GET /console/feed`), bounded: past one page the feed is paused (its `onEvent` answers false) and resumed
// once the stream has written all it holds — a client reading slowly costs the server one page of facts, not
// every fact a busy tenant records meanwhile (they wait in the outbox, in order).
import type { EventSubscription } from '../services/api.js';
import { FEED_PAGE } from '../services/events-feed.js';
import type { EventView } from '../services/types.js';

export class FeedBuffer {
  readonly #queue: EventView[] = [];
  #wake: (() => void) | undefined;
  #sub: EventSubscription | undefined;

  /** The feed's `onEvent`: false (pause) once a page is held. */
  readonly push = (e: EventView): boolean => {
    this.#queue.push(e);
    this.poke();
    return this.#queue.length < FEED_PAGE;
  };

  /** Ends a wait early (an event arrived, the client left, the process drains). */
  readonly poke = (): void => {
    this.#wake?.();
    this.#wake = undefined;
  };

  /** The feed this buffer holds for (resumed when the buffer runs empty). */
  feed(sub: EventSubscription): EventSubscription {
    this.#sub = sub;
    return sub;
  }

  get length(): number {
    return this.#queue.length;
  }

  shift(): EventView | undefined {
    return this.#queue.shift();
  }

  /** All written: resume a paused feed and wait for its next event or a poke, at most `ms` (true: timed out). */
  idle(ms: number): Promise<boolean> {
    this.#sub?.resume();
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(true), ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve(false);
      };
    });
  }
}
