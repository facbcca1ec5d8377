/* SPDX-License-Identifier: Apache-2.0 */
/* Whose code a plugin path would run: the file and every directory above it, as OpenSSH's
 * safe_path checks authorized_keys. */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"

/* "uid 1000 (alice)", or "uid 1000" for a uid without a name. */
static char *owner_name(uid_t uid)
{
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found && found->pw_name)
        return kp__asprintf("uid %u (%s)", (unsigned)uid, found->pw_name);
    return kp__asprintf("uid %u", (unsigned)uid);
}

/*
 * Why `subject` (stat'ed as `st`) lets another user change what gets loaded, or NULL. Its owner
 * could replace it, and so could anyone who may write to it, except that in a sticky directory
 * (/tmp) only an entry's owner may rename or delete it: such a directory is safe *above* a plugin,
 * whose own components are then checked, but never as the directory scanned, where anyone could
 * add a plugin of their own.
 */
static char *distrust(const char *subject, const char *path, const struct stat *st, int sticky_ok)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        char *owner = owner_name(st->st_uid);
        char *why = kp__asprintf("%s belongs to %s, not to you or root", subject,
                                 owner ? owner : "another user");
        free(owner);
        return why;
    }
    int sticky = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && sticky))
        return kp__asprintf(
            "%s is writable by other users (mode %03o; chmod g-w,o-w %s fixes that)", subject,
            (unsigned)(st->st_mode & 07777), path);
    return NULL;
}

char *kp__path_distrust(const char *real, const struct stat *st, const char *subject,
                        const char *trusted)
{
    char *why = distrust(subject, real, st, 0);
    if (why)
        return why;
    char dir[PATH_MAX];
    if (strlen(real) >= sizeof dir)
        return kp__asprintf("the path is longer than %d bytes", PATH_MAX - 1);
    strcpy(dir, real);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash || (slash == dir && dir[1] == '\0'))
            return NULL;
        if (slash == dir)
            slash[1] = '\0'; /* the root itself is checked last */
        else
            *slash = '\0';
        if (trusted && strcmp(dir, trusted) == 0)
            return NULL;
        struct stat up;
        char *name = kp__asprintf("directory %s above it", dir);
        if (!name)
            return kp__strdup("out of host memory");
        why = stat(dir, &up) != 0 ? kp__asprintf("cannot stat %s: %s", name, strerror(errno))
                                  : distrust(name, dir, &up, 1);
        free(name);
        if (why)
            return why;
    }
}
