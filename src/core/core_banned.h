/*
 * Included last in every src/core file: turns the names that would give the
 * core a clock, randomness or I/O into compile errors. Time and seeds are
 * parameters; that is what makes the simulator the real scheduler.
 */
#ifndef TIDE_CORE_BANNED_H
#define TIDE_CORE_BANNED_H

#define BANNED(name) sorry_##name##_is_banned_in_src_core

#undef time
#define time(x) BANNED(time)
#undef clock_gettime
#define clock_gettime(a, b) BANNED(clock_gettime)
#undef gettimeofday
#define gettimeofday(a, b) BANNED(gettimeofday)
#undef rand
#define rand() BANNED(rand)
#undef random
#define random() BANNED(random)
#undef printf
#define printf(...) BANNED(printf)
#undef fprintf
#define fprintf(...) BANNED(fprintf)
#undef fopen
#define fopen(a, b) BANNED(fopen)
#undef open
#define open(...) BANNED(open)
#undef read
#define read(a, b, c) BANNED(read)
#undef write
#define write(a, b, c) BANNED(write)
#undef sleep
#define sleep(x) BANNED(sleep)

#endif
