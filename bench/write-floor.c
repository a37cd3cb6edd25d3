/* The disk floor of a kb-append batch: the same files, none of the checks.
 *
 * Usage: write-floor PLAN LIBDIR
 * PLAN (made by bench/write-floor.py --plan) holds each file's final bytes:
 * "<path>\n<length>\n<bytes>" after one another. Does only the file-system
 * work of the batch's group commit: every file staged under a temp name
 * beside its target (O_CREAT|O_EXCL, write, close), one journal holding
 * every text fsynced with its directory, the renames, one syncfs, the
 * journal removed. Prints the number of files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what) {
    perror(what);
    exit(1);
}

/* mkdir -p of the directory part of `path` (a copy is cut at each '/'). */
static void parents(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0755) != 0 && errno != EEXIST) die(path);
        *p = '/';
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: write-floor PLAN LIBDIR\n");
        return 2;
    }
    FILE *plan = fopen(argv[1], "rb");
    if (!plan) die(argv[1]);
    size_t cap = 4096, n = 0;
    char **target = malloc(cap * sizeof *target), **tmp = malloc(cap * sizeof *tmp);
    char rel[4096], last_dir[4096] = "";
    int journal = -1;
    char jpath[4200];
    snprintf(jpath, sizeof jpath, "%s/.journal", argv[2]);
    journal = open(jpath, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (journal < 0) die(jpath);
    while (fgets(rel, sizeof rel, plan)) {
        rel[strcspn(rel, "\n")] = 0;
        long len;
        if (fscanf(plan, "%ld\n", &len) != 1) die("plan");
        char *bytes = malloc(len + 1);
        if (fread(bytes, 1, len, plan) != (size_t)len) die("plan");
        if (n == cap) {
            cap *= 2;
            target = realloc(target, cap * sizeof *target);
            tmp = realloc(tmp, cap * sizeof *tmp);
        }
        if (asprintf(&target[n], "%s/%s", argv[2], rel) < 0) die("asprintf");
        char *slash = strrchr(target[n], '/');
        size_t dlen = slash - target[n];
        if (strncmp(last_dir, target[n], dlen) != 0 || last_dir[dlen] != 0) {
            memcpy(last_dir, target[n], dlen);
            last_dir[dlen] = 0;
            parents(target[n]);
        }
        if (asprintf(&tmp[n], "%.*s/.%s.tmp.%d.%zu", (int)dlen, target[n], slash + 1, getpid(), n) < 0) die("asprintf");
        int fd = open(tmp[n], O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0) die(tmp[n]);
        if (write(fd, bytes, len) != len) die("write");
        close(fd);
        if (write(journal, bytes, len) != len) die("journal");
        free(bytes);
        n++;
    }
    if (fsync(journal) != 0) die("fsync");
    close(journal);
    int dir = open(argv[2], O_RDONLY | O_DIRECTORY);
    if (dir < 0 || fsync(dir) != 0) die(argv[2]);
    for (size_t i = 0; i < n; i++)
        if (rename(tmp[i], target[i]) != 0) die(target[i]);
    if (syncfs(dir) != 0) die("syncfs");
    if (unlink(jpath) != 0) die(jpath);
    close(dir);
    printf("%zu\n", n);
    return 0;
}
