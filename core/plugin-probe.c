/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The out-of-process probe: a plugin file new or changed since its last verdict is loaded and
 * initialised by kernelport-plugin-scan in a child process before this process loads any plugin
 * from disk, so that one that crashes is refused instead of taking the application down
 * (GStreamer's gst-plugin-scanner and registry, in small). The verdicts are kept in the cache
 * directory (plugin-verdicts.c), keyed by path and stat() results, with a hash of the contents
 * that is computed only when those changed: a warm start probes nothing and reads no plugin file.
 *
 * Why a helper program started with posix_spawn rather than fork(): kp_runtime_create runs in
 * applications that already have threads (their own, PoCL's). After fork() in such a process the
 * child may call only async-signal-safe functions until it execs, and dlopen and malloc are not: a
 * lock another thread held at the fork stays locked in the child for ever. posix_spawn may be
 * called from any thread, and the helper starts as a fresh single-threaded process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin-verdicts.h"

extern char **environ;

#define VERDICTS_FILE "plugin-verdicts.txt"
/* Children probing at once, at most. */
#define BATCH 16

typedef struct probe {
    kp__plugin *p;
    char sha256[65]; /* "" when the file could not be hashed: its verdict is not kept */
    pid_t pid;       /* 0 when it could not be started */
    int fd;          /* the read end of its report pipe */
    int spawn_error;
} probe;

typedef enum outcome { PASSED, CRASHED, SCANNER_FAILED } outcome;

static int same_file(const kp__file_id *a, const kp__file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* Starts the scanner on pr->p with its report pipe as descriptor 3, nothing else of ours open,
 * /dev/null for the standard streams, and every signal unblocked and at its default action:
 * whatever this process set up, a crash in the child ends it with the crash's signal. */
static int spawn(const char *scanner, probe *pr)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    int w = fds[1];
    if (w == 3) { /* dup2 onto itself would keep close-on-exec */
        w = fcntl(fds[1], F_DUPFD_CLOEXEC, 4);
        close(fds[1]);
        if (w < 0) {
            int e = errno;
            close(fds[0]);
            return e;
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, w, 3);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {(char *)scanner, pr->p->path, NULL};
    int e = posix_spawn(&pr->pid, scanner, &fa, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    close(w);
    if (e) {
        pr->pid = 0;
        close(fds[0]);
        return e;
    }
    pr->fd = fds[0];
    return 0;
}

/* The report's lines so far, NUL-terminated. After the child was reaped it reads what is there
 * (a process the plugin started may hold the pipe open); else it reads to the end. */
static void drain(int fd, int reaped, char *buf, size_t cap)
{
    if (reaped)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    size_t used = 0;
    while (used + 1 < cap) {
        ssize_t r = read(fd, buf + used, cap - 1 - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        used += (size_t)r;
    }
    buf[used] = '\0';
}

/* Where the report's last line says the child was: the step it announced and never finished. */
static const char *step_name(const char *last)
{
    if (strcmp(last, KP__SCAN_LOAD) == 0)
        return "in dlopen (its constructors or a library it needs)";
    if (strcmp(last, KP__SCAN_ENTRY) == 0)
        return "in kp_plugin_entry";
    if (strcmp(last, KP__SCAN_INIT) == 0)
        return "in init";
    return NULL;
}

static char *signal_name(int sig)
{
    const char *abbrev = sigabbrev_np(sig);
    return abbrev ? kp__asprintf("SIG%s", abbrev) : kp__asprintf("signal %d", sig);
}

/* Waits for the child and reads its report: PASSED, CRASHED with the rejection reason in *why,
 * or SCANNER_FAILED (the scanner never got to the plugin) with what happened in *why. */
static outcome finish(const char *scanner, probe *pr, char **why)
{
    *why = NULL;
    if (!pr->pid) {
        *why = kp__asprintf("cannot start %s: %s", scanner, strerror(pr->spawn_error));
        return SCANNER_FAILED;
    }
    int status = 0, reaped;
    while (!(reaped = waitpid(pr->pid, &status, 0) == pr->pid) && errno == EINTR)
        ;
    int wait_error = errno;
    char report[256];
    drain(pr->fd, reaped, report, sizeof report);
    close(pr->fd);

    size_t len = strlen(report);
    if (len && report[len - 1] == '\n')
        report[--len] = '\0';
    const char *last = strrchr(report, '\n');
    last = last ? last + 1 : report;
    int started = strncmp(report, KP__SCAN_STARTED, strlen(KP__SCAN_STARTED)) == 0;
    const char *step = step_name(last);
    if (started && strcmp(last, KP__SCAN_DONE) == 0)
        return PASSED;
    char *end = !reaped               ? kp__asprintf("an unknown status (%s)", strerror(wait_error))
                : WIFSIGNALED(status) ? signal_name(WTERMSIG(status))
                                      : kp__asprintf("exit status %d", WEXITSTATUS(status));
    if (!started || !step) {
        *why = kp__asprintf("%s ended with %s before it loaded %s", scanner, end ? end : "?",
                            pr->p->path);
        free(end);
        return SCANNER_FAILED;
    }
    if (reaped && WIFSIGNALED(status))
        *why = kp__asprintf("crashed %s with %s during the out-of-process probe", step, end);
    else
        *why = kp__asprintf("ended %s with %s during the out-of-process probe (a plugin must "
                            "return from its code, not end the process)",
                            step, end ? end : "?");
    free(end);
    return CRASHED;
}

/* Gives every plugin that will load unprobed its reason, with one warning per runtime. */
static void unprobed(kp_runtime *rt, kp__plugin *p, const char *why, int *warned)
{
    p->probe = "unavailable";
    if (*warned)
        return;
    *warned = 1;
    kp__log(rt, KP_LOG_WARN,
            "plugins load without an out-of-process probe, so one that crashes takes the "
            "application down: %s",
            why);
}

static void apply(kp_runtime *rt, kp__plugin *p, const kp__verdict *v, const char *file)
{
    if (v->crash)
        kp__plugin_reject(rt, p,
                          "%s (remembered in %s from an earlier start; probed again when the "
                          "file changes or is touched)",
                          v->crash, file);
    else
        p->probe = "cached";
}

/* Probes todo[0..n) BATCH at a time and records each verdict that can be kept. */
static void run(kp_runtime *rt, const char *scanner, probe *todo, size_t n, kp__verdicts *vs,
                int *warned)
{
    for (size_t first = 0; first < n; first += BATCH) {
        size_t end = first + BATCH < n ? first + BATCH : n;
        for (size_t i = first; i < end; i++)
            todo[i].spawn_error = spawn(scanner, &todo[i]);
        for (size_t i = first; i < end; i++) {
            kp__plugin *p = todo[i].p;
            char *why;
            outcome o = finish(scanner, &todo[i], &why);
            if (o == SCANNER_FAILED) {
                unprobed(rt, p, why ? why : "out of host memory", warned);
                free(why);
                continue;
            }
            kp__verdict *v = todo[i].sha256[0] ? kp__verdicts_put(vs, p->path) : NULL;
            if (v) {
                v->file = p->file;
                memcpy(v->sha256, todo[i].sha256, sizeof v->sha256);
                free(v->crash);
                v->crash = o == CRASHED ? kp__strdup(why) : NULL;
                vs->changed = 1;
            }
            if (o == CRASHED)
                kp__plugin_reject(rt, p, "%s",
                                  why ? why : "crashed during the out-of-process probe");
            else
                p->probe = "probed";
            free(why);
        }
    }
}

void kp__plugins_probe(kp_runtime *rt, kp__plugin **plugins, size_t n)
{
    if (!n)
        return;
    int warned = 0;
    if (!rt->manifest.plugin_probe) {
        for (size_t i = 0; i < n; i++)
            plugins[i]->probe = "off";
        return;
    }
    char *scanner = kp__beside_library(KP_SCANNER_RELPATH);
    probe *todo = calloc(n, sizeof *todo);
    if (!scanner || !todo || access(scanner, X_OK) != 0) {
        char *why =
            !scanner || !todo ? NULL : kp__asprintf("cannot run %s: %s", scanner, strerror(errno));
        for (size_t i = 0; i < n; i++)
            unprobed(rt, plugins[i], why ? why : "out of host memory", &warned);
        free(why);
        free(todo);
        free(scanner);
        return;
    }
    char *file = rt->cache_dir ? kp__asprintf("%s/" VERDICTS_FILE, rt->cache_dir) : NULL;
    kp__verdicts vs = {0};
    if (file)
        kp__verdicts_read(&vs, file);
    size_t n_todo = 0;
    for (size_t i = 0; i < n; i++) {
        kp__plugin *p = plugins[i];
        kp__verdict *v = kp__verdicts_find(&vs, p->path);
        if (v && same_file(&v->file, &p->file)) {
            apply(rt, p, v, file);
            continue;
        }
        /* Copied, touched or rebuilt the same: the contents decide whether it passed. A crash
         * is probed again, so that touching the file retries a plugin whose crash came from
         * its surroundings. */
        probe *pr = &todo[n_todo];
        pr->p = p;
        if (kp__file_sha256(p->path, pr->sha256) != 0)
            pr->sha256[0] = '\0';
        else if (v && !v->crash && strcmp(v->sha256, pr->sha256) == 0) {
            v->file = p->file;
            vs.changed = 1;
            apply(rt, p, v, file);
            continue;
        }
        n_todo++;
    }
    run(rt, scanner, todo, n_todo, &vs, &warned);
    if (file && vs.changed) {
        int e = kp__verdicts_write(&vs, rt->cache_dir, file);
        if (e)
            kp__log(rt, KP_LOG_WARN, "cannot write the plugin verdicts %s: %s", file, strerror(e));
    }
    kp__verdicts_fini(&vs);
    free(file);
    free(todo);
    free(scanner);
}
