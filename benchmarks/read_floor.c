/* The floor under reading many small files: open, one read, close, and nothing else, on N threads.
 *
 *   cc -O2 -pthread benchmarks/read_floor.c -o /tmp/read_floor
 *   /tmp/read_floor /tmp/small-files/files 50000 2
 *
 * Reads FOLDER/dddd/nnnnnn.txt for nnnnnn < COUNT (the layout `small_files.py` writes: 100 files a
 * folder), files taken round-robin by the threads, and prints the wall time. No Python, no GIL,
 * no checks: what the system calls alone cost on this machine, to hold `small_files.py`'s figures
 * against. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *folder;
static long count, threads;

static void *read_share(void *arg) {
    long first = (long)arg, total = 0;
    char path[4096];
    char *buffer = malloc(1 << 16);
    for (long k = first; k < count; k += threads) {
        snprintf(path, sizeof path, "%s/%04ld/%06ld.txt", folder, k / 100, k);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            perror(path);
            exit(1);
        }
        ssize_t n = read(fd, buffer, 1 << 16);
        close(fd);
        total += n > 0 ? n : 0;
    }
    free(buffer);
    return (void *)total;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s FOLDER COUNT THREADS\n", argv[0]);
        return 2;
    }
    folder = argv[1];
    count = atol(argv[2]);
    threads = atol(argv[3]);
    if (count < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "COUNT must be >= 1 and THREADS 1..64\n");
        return 2;
    }
    pthread_t ids[64];
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < threads; i++) pthread_create(&ids[i], NULL, read_share, (void *)i);
    long bytes = 0;
    for (long i = 0; i < threads; i++) {
        void *got;
        pthread_join(ids[i], &got);
        bytes += (long)got;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%ld files, %.1f MB, %ld threads: %.3f s wall\n", count, bytes / 1e6, threads, seconds);
    return 0;
}
