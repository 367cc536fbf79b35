/* everdict native spawner: the Node spawner (script.ts) in C, same protocol over Node's IPC channel (fd
 * NODE_CHANNEL_FD, JSON lines; a descriptor rides with its line as SCM_RIGHTS, Node's "NODE_HANDLE").
 * Why: a Node parent pays its whole page tables per fork; this process is ~1 MB and uses vfork.
 *   <- {"t":"spawn","b":"<base64 of NUL-terminated fields>"}: id, flags (h hold, c control, w warm, u user,
 *      e stdin at end-of-file: our end of fd 0 closed at once, not sent, s status: fd 3 is bubblewrap's
 *      --json-status-fd, read to its end, its "exit-code" sent with the exit as "status"; h implies it),
 *      uid, gid, file, argc, args.., envc, env.., joinc, joins.., leavec, leaves.., warm mount, warm
 *      controller, and with flag a: fdargc, fdargs.. — written NUL-terminated to the child's fd 6 (bubblewrap's
 *      --args 6 reads it to its end): arguments no process's command line shows. A memfd; held (h), a pipe
 *      written (and ended) only once bubblewrap's own pid is in the joins' cgroup.procs, so it clones its namespace
 *      init and cgroup namespace inside them (the sandbox's /proc/self/cgroup shows "/"); once the init's
 *      pid is read, bubblewrap is moved back to the leaves (our own cgroups), then the init is released
 *   -> {"t":"pid"|"init"|"warning"|"failed"|"exit",...} (a warning: a leave not written — best-effort, the
 *      command runs and bubblewrap stays in the joins' cgroups until it exits) (the exit once fd 3 has ended too) and {"cmd":"NODE_HANDLE","type":"net.Native","msg":{"t":"fd",..}}
 * Lines from Node it does not know (NODE_HANDLE_ACK) are skipped. One thread beside the loop writes
 * cgroup.procs (the first write after a quiet spell waits for an RCU grace period).
 * The driver gone (its channel ended, or a send to it failed): every bubblewrap not yet reaped is SIGKILLed
 * with its process group — the namespace init still held is in it — and each released init (a pidfd), then
 * this process exits. --die-with-parent alone leaves some behind (bubblewrap sets PR_SET_PDEATHSIG only after
 * its clone, and a held init reads end-of-file on --block-fd as "go" and runs its command, orphaned and in no
 * sandbox cgroup), so it is not relied on: kill_all(). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef SYS_pidfd_open /* older headers: the numbers every architecture shares since Linux 5.3 */
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static int chan = -1, wake[2];
static void kill_all(void);

/* ---- output: one JSON line per message, a descriptor attached with SCM_RIGHTS ---- */
static void send_line(const char *line, int fd) {
  struct iovec iov = {(void *)line, strlen(line)};
  union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  while (iov.iov_len > 0) {
    ssize_t n = sendmsg(chan, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) kill_all(); /* the driver is gone */
    iov.iov_base = (char *)iov.iov_base + n;
    iov.iov_len -= (size_t)n;
    msg.msg_control = NULL; /* the descriptor went with the first byte */
    msg.msg_controllen = 0;
  }
}

static const struct { int n; const char *name; } SIGNALS[] = {
  {SIGHUP, "SIGHUP"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"}, {SIGTRAP, "SIGTRAP"},
  {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
  {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
  {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
  {SIGTTOU, "SIGTTOU"}, {SIGURG, "SIGURG"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"},
  {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGIO, "SIGIO"}, {SIGPWR, "SIGPWR"}, {SIGSYS, "SIGSYS"},
};

/* t: "failed" (the start failed: killed) or "warning" (it goes on: a move back out that could not be made) */
static void send_message(const char *t, long id, const char *what, const char *path, int err) {
  char line[1024], text[700];
  snprintf(text, sizeof text, "%s %s: %s", what, path, strerror(err));
  for (char *p = text; *p; p++) if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) *p = '?';
  snprintf(line, sizeof line, "{\"t\":\"%s\",\"id\":%ld,\"message\":\"%s\"}\n", t, id, text);
  send_line(line, -1);
}
static void send_failed(long id, const char *what, const char *path, int err) {
  send_message("failed", id, what, path, err);
}

/* ---- children ---- */
struct child {
  long id;
  pid_t pid, init;
  int init_fd; /* a pidfd of the namespace init, opened while it is held (kill_all) */
  int info, release; /* bubblewrap's --json-status-fd (read to its end) and, held, --block-fd (written once joined) */
  int hold;
  char text[1024]; /* the status line being read */
  size_t len;
  int status; /* the "exit-code" bubblewrap reported; -1: none (yet) */
  char exit_line[160]; /* the exit message, kept until fd 3 has ended */
  char *payload; /* the request: joins and leaves point into it */
  char **joins, **leaves;
  int njoin, nleave, asked, joining, exited;
  int args_w; /* held: our end of fd 6's pipe, written and closed once bubblewrap joined */
  char *args_buf; /* held: its options (NUL-terminated each), written to args_w only once it joined */
  size_t args_len;
  struct child *next;
};
static struct child *children;

static void free_child(struct child *c) {
  for (struct child **p = &children; *p; p = &(*p)->next)
    if (*p == c) { *p = c->next; break; }
  if (c->info >= 0) close(c->info);
  if (c->release >= 0) close(c->release);
  if (c->init_fd >= 0) close(c->init_fd);
  if (c->args_w >= 0) close(c->args_w);
  free(c->args_buf);
  free(c->joins);
  free(c->leaves);
  free(c->payload);
  free(c);
}
static void maybe_free(struct child *c) {
  if (c->exited && c->info < 0 && !c->joining) free_child(c);
}

/* ---- the join thread: cgroup.procs writes, in order, off the loop ---- */
/* pid written into each of files; leave: bubblewrap moved back out once init (its clone) exists */
struct job {
  struct child *c; int warm_fd; pid_t pid, init; char **files; int nfiles, leave; int err; const char *failed;
  struct job *next;
};
static struct job *todo, *done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;

/* The leaves' descriptors, kept open (O_CLOEXEC) by this thread alone: every command's leave writes the same
 * files — our own cgroups' cgroup.procs — so each is opened once, not on every command (an open and a close
 * of a cgroup file each time: README, Figures). A write through a kept descriptor that fails for anything
 * but the pid (ESRCH) drops it, and the file is opened afresh, as an uncached write would be. */
static struct { char path[4096]; int fd; } kept[8];
static int leave_write(const char *path, const char *pid) {
  int k = 0;
  while (k < 8 && kept[k].fd > 0 && strcmp(kept[k].path, path) != 0) k++;
  if (k < 8 && kept[k].fd > 0) {
    if (write(kept[k].fd, pid, strlen(pid)) >= 0) return 0;
    if (errno == ESRCH) return ESRCH; /* the pid's: the descriptor is fine */
    close(kept[k].fd);
    kept[k].fd = 0;
  }
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  if (write(fd, pid, strlen(pid)) < 0) {
    int e = errno;
    close(fd);
    return e;
  }
  for (k = 0; k < 8 && kept[k].fd > 0; k++) {}
  if (k < 8 && strlen(path) < sizeof kept[k].path) {
    strcpy(kept[k].path, path);
    kept[k].fd = fd;
  } else {
    close(fd);
  }
  return 0;
}

static void *joiner(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (!todo) pthread_cond_wait(&more, &lock);
    struct job *j = todo;
    todo = j->next;
    pthread_mutex_unlock(&lock);
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)j->pid);
    if (j->warm_fd >= 0) { /* a move of this process to the cgroup it is in: warms the lock */
      if (write(j->warm_fd, pid, strlen(pid)) < 0) {}
      free(j);
      continue;
    }
    /* a join stops at its first failure (fatal); a leave tries every file (best-effort: joined()) and
     * keeps its first failure that is not ESRCH (bubblewrap gone: no warning), so one cannot hide another */
    for (int i = 0; i < j->nfiles && j->leave; i++) {
      int e = leave_write(j->files[i], pid);
      if (e && (!j->failed || (j->err == ESRCH && e != ESRCH))) { j->err = e; j->failed = j->files[i]; }
    }
    for (int i = 0; i < j->nfiles && !j->leave && !j->failed; i++) {
      int fd = open(j->files[i], O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, pid, strlen(pid)) < 0) { j->err = errno; j->failed = j->files[i]; }
      if (fd >= 0) close(fd);
    }
    pthread_mutex_lock(&lock);
    j->next = done;
    done = j;
    pthread_mutex_unlock(&lock);
    if (write(wake[1], "j", 1) < 0) {}
  }
  return NULL;
}
static void queue(struct job *j) {
  pthread_mutex_lock(&lock);
  struct job **p = &todo;
  while (*p) p = &(*p)->next;
  j->next = NULL;
  *p = j;
  pthread_cond_signal(&more);
  pthread_mutex_unlock(&lock);
}

/* ---- warm (script.ts): before a held start, write our own pid into the cgroup we are in ---- */
static long long last_attach_ms;
static int warm_fd = -1;
static char warm_path[4096];
static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
static void warm(const char *mount, const char *controller) {
  long long now = now_ms();
  if (now - last_attach_ms < 4) return;
  last_attach_ms = now;
  FILE *f = fopen("/proc/self/cgroup", "re");
  if (!f) return;
  char line[4096], path[4096] = "";
  while (fgets(line, sizeof line, f)) { /* "<n>:<controllers>:<path>" */
    line[strcspn(line, "\n")] = 0;
    char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
    if (!b) continue;
    *b = 0;
    int match = controller[0] == 0 ? strncmp(line, "0:", 2) == 0 && a[1] == 0 : 0;
    for (char *tok = strtok(a + 1, ","); tok && controller[0]; tok = strtok(NULL, ","))
      if (strcmp(tok, controller) == 0) match = 1;
    if (match) {
      snprintf(path, sizeof path, "%s%s/cgroup.procs", mount, strcmp(b + 1, "/") == 0 ? "" : b + 1);
      break;
    }
  }
  fclose(f);
  if (!path[0]) return;
  if (strcmp(path, warm_path) != 0) {
    /* the old descriptor is left open: a queued warm write may still use it (a move is rare) */
    warm_path[0] = 0;
    if ((warm_fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) return;
    strcpy(warm_path, path);
  }
  struct job *j = calloc(1, sizeof *j);
  j->warm_fd = warm_fd;
  j->pid = getpid();
  queue(j);
}

/* ---- a request ---- */
static int b64(int ch) {
  const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const char *p = ch ? strchr(A, ch) : NULL;
  return p ? (int)(p - A) : -1;
}
static size_t unbase64(const char *in, size_t n, char *out) {
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64(in[i]);
    if (v < 0) continue; /* '=' padding */
    acc = (acc << 6) | (unsigned)v;
    if ((bits += 6) >= 8) { bits -= 8; out[o++] = (char)((acc >> bits) & 0xff); }
  }
  return o;
}
struct fields { char *p, *end; };
static char *field(struct fields *f) {
  if (f->p >= f->end) return NULL;
  char *s = f->p;
  f->p += strlen(s) + 1;
  return s;
}
static char **list(struct fields *f, int *count) {
  char *n = field(f);
  *count = n ? atoi(n) : 0;
  char **v = calloc((size_t)*count + 1, sizeof *v);
  for (int i = 0; i < *count; i++) v[i] = field(f);
  return v;
}

/* The executable as libuv finds it: a name without '/' is looked up in the request's own PATH. */
static const char *resolve(const char *file, char **env, char *buf, size_t size) {
  if (strchr(file, '/')) return file;
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  for (char **e = env; *e; e++) if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  for (const char *p = path;; p++) {
    const char *q = strchr(p, ':');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    snprintf(buf, size, "%.*s/%s", (int)n, n ? p : ".", file);
    if (access(buf, X_OK) == 0) return buf;
    if (!q) return file;
    p = q;
  }
}

/* Writes all of len bytes to fd (a pipe sized to hold them, or a memfd): 0 or the errno. SIGPIPE is blocked
 * around it and a pending one taken: a reader gone (bubblewrap killed) is EPIPE here, not this process's death
 * (ignoring SIGPIPE instead would pass that to every command, an inherited disposition). */
static int write_all(int fd, const char *p, size_t len) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int err = 0;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) { err = errno; break; }
    p += w;
    len -= (size_t)w;
  }
  if (err == EPIPE) {
    const struct timespec now = {0, 0};
    sigtimedwait(&pipe_set, NULL, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

/* Starts one request; owns the payload (kept with the child while its joins may still be written). */
static void start(char *payload, size_t n) {
  struct fields f = {payload, payload + n};
  char *ids = field(&f), *flags = field(&f), *uid = field(&f), *gid = field(&f), *file = field(&f);
  if (!file) { free(payload); return; }
  long id = atol(ids);
  int hold = strchr(flags, 'h') != NULL, control = strchr(flags, 'c') != NULL, eof = strchr(flags, 'e') != NULL;
  int status = hold || strchr(flags, 's') != NULL;
  int argc, envc, joinc, leavec;
  char **args = list(&f, &argc), **env = list(&f, &envc), **joins = list(&f, &joinc);
  char **leaves = list(&f, &leavec);
  int args_w = -1;
  char *held_args = NULL;
  size_t held_len = 0;
  char *mount = field(&f), *controller = field(&f);
  int fdargc = 0;
  char **fdargs = strchr(flags, 'a') ? list(&f, &fdargc) : NULL;
  if (hold && strchr(flags, 'w') && mount && controller) warm(mount, controller);
  /* Sockets as libuv makes them for 'pipe' stdio: ours[i] stays here, theirs[i] becomes the child's fd i;
   * theirs[6]: the memfd of fdargs, read from its start. */
  int ours[7], theirs[7], used[6] = {1, 1, 1, status, hold, control};
  for (int i = 0; i < 7; i++) ours[i] = theirs[i] = -1;
  if (hold && !fdargs) { send_failed(id, "join", "without fd 6", EINVAL); goto fail; }
  if (fdargs && hold) {
    /* a pipe holding them all (so no write waits), its end withheld until bubblewrap joined */
    int pp[2];
    size_t total = 0;
    for (int i = 0; i < fdargc && fdargs[i]; i++) total += strlen(fdargs[i]) + 1;
    if (pipe2(pp, O_CLOEXEC) < 0) { send_failed(id, "spawn", file, errno); goto fail; }
    theirs[6] = pp[0];
    args_w = pp[1];
    if (total > 65536 && fcntl(args_w, F_SETPIPE_SZ, (int)total) < (int)total) {
      send_failed(id, "spawn", file, E2BIG);
      goto fail;
    }
  } else if (fdargs) {
    if ((theirs[6] = memfd_create("bwrap-args", MFD_CLOEXEC)) < 0) { send_failed(id, "spawn", file, errno); goto fail; }
  }
  if (fdargs) {
    /* all of them, each with its NUL, in one write (not one per option: ≈ 50 system calls a command) */
    size_t len = 0;
    for (int i = 0; i < fdargc && fdargs[i]; i++) len += strlen(fdargs[i]) + 1;
    char *all = malloc(len + 1), *p = all;
    for (int i = 0; i < fdargc && fdargs[i]; i++) p = stpcpy(p, fdargs[i]) + 1;
    if (args_w >= 0) {
      /* Held: written only once bubblewrap joined (joined()). Not now: a spawner killed between this write
       * and the join closed fd 6 with every option in it, and bubblewrap cloned its init outside the
       * sandbox's cgroups, out of dispose's reach. Killed before the join, fd 6 ends empty: bubblewrap has
       * no options, no root to exec from, and fails. */
      held_args = all;
      held_len = len;
    } else {
      int err = write_all(theirs[6], all, len);
      free(all);
      if (err) { send_failed(id, "spawn", file, err); goto fail; }
      if (lseek(theirs[6], 0, SEEK_SET) < 0) { send_failed(id, "spawn", file, errno); goto fail; }
    }
  }
  for (int i = 0; i < 6; i++) {
    int sv[2];
    if (!used[i]) continue;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) { send_failed(id, "spawn", file, errno); goto fail; }
    ours[i] = sv[0];
    theirs[i] = sv[1];
    /* ours non-blocking, as libuv leaves the parent's end (the driver's loop reads and writes it);
     * theirs blocking, as a program expects its stdio */
    fcntl(ours[i], F_SETFL, fcntl(ours[i], F_GETFL) | O_NONBLOCK);
  }
  char **argv = calloc((size_t)argc + 2, sizeof *argv);
  argv[0] = file;
  memcpy(argv + 1, args, (size_t)argc * sizeof *argv);
  char found[4096];
  const char *volatile path = resolve(file, env, found, sizeof found);
  int has_user = strchr(flags, 'u') != NULL;
  uid_t u = (uid_t)atol(uid);
  gid_t g = (gid_t)atol(gid);
  volatile int child_err = 0;
  pid_t self = getpid();
  pid_t pid = vfork();
  if (pid == 0) {
    /* The child shares our memory until it execs: raw system calls only (glibc's setuid would signal
     * our threads), and its error goes back through child_err. */
    setsid();
    if (has_user) {
      syscall(SYS_setgroups, 0, NULL); /* fails unless root: then there is nothing to drop */
      if (syscall(SYS_setgid, g) != 0 || syscall(SYS_setuid, u) != 0) { child_err = errno; _exit(127); }
    }
    /* Dies with this process from its first instruction (after the uid change, which clears it): bubblewrap
     * sets it only after its clone. A parent gone already (getppid changed) is a death missed: exit. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != self) { child_err = ESRCH; _exit(127); }
    int moved[7];
    for (int i = 0; i < 7; i++) moved[i] = theirs[i] < 0 ? -1 : fcntl(theirs[i], F_DUPFD_CLOEXEC, 10);
    for (int i = 0; i < 7; i++) if (moved[i] >= 0 && dup2(moved[i], i) < 0) { child_err = errno; _exit(127); }
    execve(path, argv, env);
    child_err = errno;
    _exit(127);
  }
  int err = pid < 0 ? errno : child_err;
  free(argv);
  for (int i = 0; i < 7; i++) if (theirs[i] >= 0) { close(theirs[i]); theirs[i] = -1; }
  if (eof) { close(ours[0]); ours[0] = -1; } /* the command reads end-of-file on its stdin */
  if (err) {
    if (pid > 0) waitpid(pid, NULL, 0);
    send_failed(id, "spawn", file, err);
    char line[96];
    snprintf(line, sizeof line, "{\"t\":\"exit\",\"id\":%ld,\"code\":null,\"signal\":null,\"status\":null}\n", id);
    send_line(line, -1);
    goto fail;
  }
  struct child *c = calloc(1, sizeof *c);
  c->id = id;
  c->pid = pid;
  c->info = ours[3]; /* -1 unless used: status */
  c->release = ours[4]; /* -1 unless used: hold */
  c->hold = hold;
  c->init_fd = -1;
  c->status = -1;
  c->payload = payload;
  c->joins = joins;
  c->njoin = joinc;
  c->leaves = leaves;
  c->nleave = leavec;
  c->args_w = args_w;
  args_w = -1;
  c->args_buf = held_args;
  c->args_len = held_len;
  held_args = NULL;
  c->next = children;
  children = c;
  if (hold) { /* bubblewrap itself into the cgroups; its options end once it is there (joined) */
    struct job *j = calloc(1, sizeof *j);
    j->c = c;
    j->warm_fd = -1;
    j->pid = pid;
    j->files = joins;
    j->nfiles = joinc;
    c->joining++;
    queue(j);
  }
  char line[160];
  snprintf(line, sizeof line, "{\"t\":\"pid\",\"id\":%ld,\"pid\":%d}\n", id, (int)pid);
  send_line(line, -1);
  const int sent[4] = {0, 1, 2, 5};
  for (int k = 0; k < 4; k++) {
    int i = sent[k];
    if (ours[i] < 0) continue;
    snprintf(line, sizeof line,
             "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Native\",\"msg\":{\"t\":\"fd\",\"id\":%ld,\"i\":%d}}\n", id, i);
    send_line(line, ours[i]);
    close(ours[i]);
  }
  free(args);
  free(env);
  free(fdargs);
  return;
fail:
  for (int i = 0; i < 7; i++) if (ours[i] >= 0) close(ours[i]);
  for (int i = 0; i < 7; i++) if (theirs[i] >= 0) close(theirs[i]);
  if (args_w >= 0) close(args_w);
  free(held_args);
  free(args);
  free(env);
  free(fdargs);
  free(joins);
  free(leaves);
  free(payload);
}

/* The number after "key": in line, or -1 when it is not there. */
static long member(const char *line, const char *key) {
  const char *k = strstr(line, key);
  if (!k) return -1;
  k += strlen(key);
  while (*k == ' ' || *k == '\t' || *k == ':') k++;
  char *end;
  long v = strtol(k, &end, 10);
  return end == k ? -1 : v;
}

/* The exit message, once the child was reaped and its fd 3 (if any) has ended: the status is all read. */
static void send_exit(struct child *c) {
  if (!c->exited || c->info >= 0 || !c->exit_line[0]) return;
  char line[200];
  char status[24] = "null";
  if (c->status >= 0) snprintf(status, sizeof status, "%d", c->status);
  snprintf(line, sizeof line, "%s,\"status\":%s}\n", c->exit_line, status);
  c->exit_line[0] = 0;
  send_line(line, -1);
}

/* Bubblewrap's --json-status-fd, one JSON object a line: {"child-pid": N, ...} (held: move bubblewrap back
 * out of the cgroups N was born in, then release N), later {"exit-code": N} for a command it exec'd. Read to its end: a closed reader would SIGPIPE it. */
static void read_info(struct child *c) {
  char buf[512];
  ssize_t n = read(c->info, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) { close(c->info); c->info = -1; send_exit(c); maybe_free(c); return; }
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] != '\n') {
      if (c->len < sizeof c->text - 1) c->text[c->len++] = buf[i];
      continue;
    }
    c->text[c->len] = 0;
    c->len = 0;
    long code = member(c->text, "\"exit-code\"");
    if (code >= 0) c->status = (int)code;
    long pid = member(c->text, "\"child-pid\"");
    if (pid <= 0 || !c->hold || c->asked) continue;
    /* Held now (--block-fd): this pid is the init's until we release it. kill_all signals it through this. */
    c->init_fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    struct job *j = calloc(1, sizeof *j);
    j->c = c;
    j->warm_fd = -1;
    j->pid = c->pid;
    j->init = (pid_t)pid;
    j->files = c->leaves;
    j->nfiles = c->nleave;
    j->leave = 1;
    c->asked = 1;
    c->joining++;
    queue(j);
  }
}

static void joined(struct job *j) {
  struct child *c = j->c;
  c->joining--;
  if (j->failed && j->leave && j->err != ESRCH) {
    /* Best-effort: our own cgroup not writable here (a delegated subtree) — bubblewrap stays in the
     * sandbox's cgroups until it exits (it waits for its init) and the command runs; the driver warns. */
    send_message("warning", c->id, "leave", j->failed, j->err);
    j->failed = NULL;
  } else if (j->failed && j->leave) {
    j->failed = NULL; /* ESRCH: bubblewrap is gone (its own failure, told by its status): nothing to move */
  }
  if (j->failed) {
    /* not reaped yet (a child is freed only once no job is pending): its pid and group are still its own */
    if (!c->exited) { kill(-c->pid, SIGKILL); kill(c->pid, SIGKILL); }
    if (j->init > 0) kill(j->init, SIGKILL);
    send_failed(c->id, j->leave ? "leave" : "join", j->failed, j->err);
    if (c->args_w >= 0) { close(c->args_w); c->args_w = -1; }
  } else if (!j->leave) {
    last_attach_ms = now_ms();
    if (c->args_w >= 0) { /* its options, and their end: it clones in the cgroups */
      /* EPIPE: bubblewrap is gone already (killed): its exit tells the driver */
      if (write_all(c->args_w, c->args_buf, c->args_len)) {}
      close(c->args_w);
      c->args_w = -1;
      free(c->args_buf); /* not kept for the command's life */
      c->args_buf = NULL;
    }
  } else {
    last_attach_ms = now_ms();
    c->init = j->init;
    char line[96];
    snprintf(line, sizeof line, "{\"t\":\"init\",\"id\":%ld,\"pid\":%d}\n", c->id, (int)j->init);
    send_line(line, -1);
    if (c->release >= 0) {
      if (send(c->release, "1", 1, MSG_NOSIGNAL) < 0) {}
      close(c->release);
      c->release = -1;
    }
  }
  free(j);
  maybe_free(c);
}

static void reap(void) {
  int st;
  pid_t pid;
  while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
    struct child *c = children;
    while (c && c->pid != pid) c = c->next;
    if (!c) continue;
    if (WIFSIGNALED(st)) {
      const char *name = "SIGKILL";
      for (size_t i = 0; i < sizeof SIGNALS / sizeof *SIGNALS; i++) if (SIGNALS[i].n == WTERMSIG(st)) name = SIGNALS[i].name;
      snprintf(c->exit_line, sizeof c->exit_line, "{\"t\":\"exit\",\"id\":%ld,\"code\":null,\"signal\":\"%s\"", c->id, name);
    } else {
      snprintf(c->exit_line, sizeof c->exit_line, "{\"t\":\"exit\",\"id\":%ld,\"code\":%d,\"signal\":null", c->id, WEXITSTATUS(st));
    }
    c->exited = 1;
    send_exit(c);
    if (c->release >= 0) { close(c->release); c->release = -1; }
    maybe_free(c);
  }
}

/* The driver is gone: SIGKILL every bubblewrap not yet reaped with its process group (its pid: setsid in
 * start(); a held namespace init is in it until released — it reads end-of-file on --block-fd otherwise and
 * runs its command) and each released namespace init (its pidfd: its namespace dies with it), then exit.
 * A reaped child is not signalled: its pid and group may be someone else's. */
static void kill_all(void) {
  for (struct child *c = children; c; c = c->next) {
    if (c->exited) continue;
    kill(-c->pid, SIGKILL);
    kill(c->pid, SIGKILL);
    if (c->init_fd >= 0) syscall(SYS_pidfd_send_signal, c->init_fd, SIGKILL, NULL, 0);
  }
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  int e = errno;
  if (write(wake[1], "c", 1) < 0) {}
  errno = e;
}

/* Descriptors this process inherited (a shell's, a supervisor's) must reach no sandbox: close all but
 * stdio and the channel, which is made close-on-exec. */
static void close_inherited(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    int fd = atoi(e->d_name);
    if (fd > 2 && fd != chan && fd != dirfd(d)) close(fd);
  }
  closedir(d);
  fcntl(chan, F_SETFD, FD_CLOEXEC);
}

int main(void) {
  const char *ch = getenv("NODE_CHANNEL_FD");
  if (!ch) return 2;
  chan = atoi(ch);
  close_inherited();
  fcntl(chan, F_SETFL, fcntl(chan, F_GETFL) & ~O_NONBLOCK);
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0) return 2;
  struct sigaction sa = {0};
  sa.sa_handler = on_child;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  pthread_t t;
  if (pthread_create(&t, NULL, joiner, NULL) != 0) return 2;
  char *in = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    size_t count = 2;
    for (struct child *c = children; c; c = c->next) count += c->info >= 0;
    struct pollfd *fds = calloc(count, sizeof *fds);
    struct child **owner = calloc(count, sizeof *owner);
    fds[0] = (struct pollfd){chan, POLLIN, 0};
    fds[1] = (struct pollfd){wake[0], POLLIN, 0};
    size_t k = 2;
    for (struct child *c = children; c; c = c->next)
      if (c->info >= 0) { owner[k] = c; fds[k++] = (struct pollfd){c->info, POLLIN, 0}; }
    if (poll(fds, k, -1) < 0 && errno != EINTR) return 2;
    if (fds[1].revents) {
      char drain[64];
      while (read(wake[0], drain, sizeof drain) > 0) {}
      reap();
      pthread_mutex_lock(&lock);
      struct job *j = done;
      done = NULL;
      pthread_mutex_unlock(&lock);
      while (j) { struct job *next = j->next; joined(j); j = next; }
    }
    for (size_t i = 2; i < k; i++) if (fds[i].revents) read_info(owner[i]);
    int input = fds[0].revents != 0;
    free(fds);
    free(owner);
    if (input) {
      if (cap - len < 65536) in = realloc(in, cap = cap * 2 + 65536);
      ssize_t n = read(chan, in + len, cap - len);
      if (n == 0 || (n < 0 && errno != EINTR)) kill_all(); /* the driver is gone */
      if (n > 0) len += (size_t)n;
      char *nl;
      size_t used = 0;
      while ((nl = memchr(in + used, '\n', len - used))) {
        char *line = in + used, *b = strstr(line, "\"b\":\"");
        *nl = 0;
        if (strncmp(line, "{\"t\":\"spawn\"", 12) == 0 && b) {
          b += 5;
          char *q = strchr(b, '"');
          if (q) {
            char *payload = malloc((size_t)(q - b) + 1);
            start(payload, unbase64(b, (size_t)(q - b), payload));
          }
        }
        used = (size_t)(nl - in) + 1;
      }
      memmove(in, in + used, len - used);
      len -= used;
    }
  }
}
