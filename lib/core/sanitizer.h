/* sanitizer.h — what a sanitizer build changes, named once for the library, the command
 * and the tests. Internal to the library (not installed).
 *   LA_UNDER_ASAN  1 in an AddressSanitizer build (gcc's __SANITIZE_ADDRESS__, clang's
 *                  __has_feature(address_sanitizer)), else 0.
 *   LA_MEASURES_MACHINE  on a function that times the machine (a bandwidth probe, the
 *                  command's calibration kernel): compiled at -O3 (gcc) and without the
 *                  sanitizers' checks in every build, so that it runs the same
 *                  instructions whatever the build and a sanitizer build measures the
 *                  machine, not its checks. */
#ifndef LA_SANITIZER_H
#define LA_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define LA_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LA_UNDER_ASAN 1
#endif
#endif
#ifndef LA_UNDER_ASAN
#define LA_UNDER_ASAN 0
#endif

#if defined(__GNUC__) && !defined(__clang__)
#define LA_MEASURES_MACHINE __attribute__((optimize("O3"), no_sanitize("address", "undefined")))
#else
#define LA_MEASURES_MACHINE __attribute__((no_sanitize("address", "undefined")))
#endif

#endif
