/*
 * memholder: hold N MiB of memory with a known pattern and keep checking it.
 *
 * Used to see from outside that a checkpoint/restore kept a process whole: it
 * prints a counter that must continue after a restore, verifies its memory
 * continuously (exit 2 on the first wrong word), and reports the longest gap
 * between two ticks, which is how long it was frozen.
 *
 * usage: memholder [-t tick_ms] [-r report_ms] [-p port] MiB
 *
 * Every report interval it prints one line:
 *   memholder mib=64 count=1234 verified_passes=3 maxgap_ms=12.3 lastgap_ms=10.1 ok
 * With -p it also serves that line (without "memholder ") to each TCP
 * connection on the port. Single-threaded, so that CRIU dumps it trivially.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SEED 0x9e3779b97f4a7c15ULL
#define SLICE_WORDS ((1 << 20) / 8) /* verify 1 MiB per tick */

static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

/* splitmix64 of the word's index: every word differs, nothing compresses. */
static inline uint64_t pattern(uint64_t i)
{
	uint64_t z = i * SEED + SEED;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int listen_on(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0) {
		perror("memholder: listen");
		exit(1);
	}
	return fd;
}

int main(int argc, char **argv)
{
	long tick_ms = 10, report_ms = 1000, mib;
	int port = 0, opt, lfd = -1;
	while ((opt = getopt(argc, argv, "t:r:p:")) != -1) {
		switch (opt) {
		case 't': tick_ms = atol(optarg); break;
		case 'r': report_ms = atol(optarg); break;
		case 'p': port = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || (mib = atol(argv[optind])) <= 0 || tick_ms <= 0 || report_ms <= 0)
		goto usage;

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	uint64_t words = (uint64_t)mib << 17, i;
	uint64_t *mem = malloc(words * 8);
	if (!mem) {
		perror("memholder: malloc");
		return 1;
	}
	for (i = 0; i < words; i++) /* writes every page */
		mem[i] = pattern(i);
	if (port)
		lfd = listen_on(port);

	uint64_t count = 0, passes = 0, pos = 0;
	double last = now_ms(), next_report = last + report_ms, maxgap = 0, lastgap = 0;
	char line[256];
	while (!stop) {
		struct pollfd p = {.fd = lfd, .events = POLLIN};
		int n = poll(&p, lfd >= 0 ? 1 : 0, (int)tick_ms);
		double t = now_ms();
		if (n > 0 && (p.revents & POLLIN)) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				int len = snprintf(line, sizeof(line), "mib=%ld count=%llu verified_passes=%llu maxgap_ms=%.1f ok\n",
						   mib, (unsigned long long)count, (unsigned long long)passes, maxgap);
				if (write(c, line, len) < 0) { /* the client went away */ }
				close(c);
			}
			if (t - last < tick_ms)
				continue;
		}
		lastgap = t - last;
		if (count > 0 && lastgap > maxgap)
			maxgap = lastgap;
		last = t;
		count++;
		for (i = 0; i < SLICE_WORDS; i++, pos++) {
			if (pos == words) {
				pos = 0;
				passes++;
			}
			if (mem[pos] != pattern(pos)) {
				printf("memholder CORRUPT at offset %llu\n", (unsigned long long)(pos * 8));
				return 2;
			}
		}
		if (t >= next_report) {
			printf("memholder mib=%ld count=%llu verified_passes=%llu maxgap_ms=%.1f lastgap_ms=%.1f ok\n", mib,
			       (unsigned long long)count, (unsigned long long)passes, maxgap, lastgap);
			next_report = t + report_ms;
		}
	}
	return 0;
usage:
	fprintf(stderr, "usage: memholder [-t tick_ms] [-r report_ms] [-p port] MiB\n");
	return 1;
}
