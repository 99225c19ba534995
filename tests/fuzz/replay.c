/* Replays fuzz inputs without libFuzzer: every file named, and every file in every folder
 * named, goes through the target's LLVMFuzzerTestOneInput once (a finding aborts). Built
 * with each target in the ordinary builds, so the seed corpus and the saved regressions run
 * in ctest, and under the sanitizers in their build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot read\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *more = realloc(buf, cap * 2);
        if (!more)
            free(buf);
        buf = more;
        cap *= 2;
    }
    fclose(f);
    if (!buf)
        return -1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int k = 1; k < argc; ++k) {
        struct stat st;
        if (stat(argv[k], &st) != 0) {
            fprintf(stderr, "%s: not found\n", argv[k]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[k]) < 0)
                return 1;
            ++count;
            continue;
        }
        DIR *d = opendir(argv[k]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[k], e->d_name);
            if (replay_file(path) < 0) {
                closedir(d);
                return 1;
            }
            ++count;
        }
        if (d)
            closedir(d);
    }
    printf("replayed %d inputs\n", count);
    return count > 0 ? 0 : 1; /* no input at all is a broken test, not a pass */
}
