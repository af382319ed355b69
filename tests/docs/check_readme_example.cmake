# The README shows the smallest example; this checks that what it shows is the
# tested file, byte for byte, so the two cannot drift apart.
# Usage: cmake -DROOT=<source dir> -DEXAMPLE=examples/hello.c -P check_readme_example.cmake
cmake_policy(VERSION 3.21)
file(READ ${ROOT}/README.md readme)
file(READ ${ROOT}/${EXAMPLE} example)
string(FIND "${readme}" "```c\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md has no ```c block equal to ${EXAMPLE}; paste the file again")
endif()
message(STATUS "README.md shows ${EXAMPLE} as it is")
