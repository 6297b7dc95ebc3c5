/* Run a libFuzzer target over files without libFuzzer: `replay_x PATH...` feeds every file
 * (a directory: each regular file in it, in name order) once to LLVMFuzzerTestOneInput. So
 * the corpus, and every crash found and added to it, is a regression test that any compiler
 * builds (ctest "fuzz.replay.*"). A crash or failed invariant aborts; exit 0 after at least
 * one input, 1 when no input was found. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Inputs larger than this are cut (libFuzzer's -max_len is smaller anyway). */
#define REPLAY_MAX_BYTES (1024 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    uint8_t *buf = malloc(REPLAY_MAX_BYTES);
    if (!buf) {
        fclose(f);
        fprintf(stderr, "replay: out of memory\n");
        return -1;
    }
    size_t n = fread(buf, 1, REPLAY_MAX_BYTES, f);
    fclose(f);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int skip_name(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* Returns how many files ran, or -1. */
static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or directory: %s\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path) == 0 ? 1 : -1;
    struct dirent **names = NULL;
    int n = scandir(path, &names, skip_name, alphasort);
    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", path);
        return -1;
    }
    int ran = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, names[i]->d_name);
        if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(file) == 0)
                ran++;
            else
                failed = 1;
        }
        free(names[i]);
    }
    free(names);
    return failed ? -1 : ran;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int n = run_path(argv[i]);
        if (n < 0)
            return 1;
        total += n;
    }
    printf("replayed %d inputs\n", total);
    return total > 0 ? 0 : 1;
}
