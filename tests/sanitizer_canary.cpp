// Reads one element past a heap buffer. Under AddressSanitizer this aborts
// with a heap-buffer-overflow report; the CTest test passes only on that
// report, which proves the sanitizer build links the sanitizer.
#include <cstdio>
#include <cstdlib>

int main(int argc, char**) {
  volatile int* data = static_cast<int*>(std::malloc(4 * sizeof(int)));
  for (int i = 0; i < 4; ++i) data[i] = i;
  const int past_the_end = data[4 + (argc - 1)];
  std::printf("read %d without a sanitizer report\n", past_the_end);
  std::free(const_cast<int*>(data));
  return 0;
}
