# TRELLIS_STATIC: the release build of trellis-port (scripts/build-port.sh).
#
# One fully static executable per CPU (no NEEDED entries), so the same x86_64
# file runs on any glibc and on musl hosts (Alpine): libpq, OpenSSL, libstdc++
# and glibc are all linked in. Two consequences shape this file:
#
# - libpq comes from a PostgreSQL source tree configured without GSSAPI and
#   LDAP (TRELLIS_LIBPQ_PREFIX, made by scripts/build-port.sh): Debian's
#   libpq.a references Kerberos and OpenLDAP, which Debian ships only as
#   shared libraries.
# - glibc's getaddrinfo in a static binary loads NSS modules at run time,
#   which a musl host does not have, so the engine resolves host names itself
#   with c-ares (TRELLIS_CARES, engine/src/pg/resolve.cc).
#
# spdlog and fmt are used header-only (Debian ships them as shared libraries).

set(TRELLIS_LIBPQ_PREFIX "" CACHE PATH "Install prefix of a libpq built from source (static build)")
if(NOT TRELLIS_LIBPQ_PREFIX OR NOT EXISTS "${TRELLIS_LIBPQ_PREFIX}/lib/libpq.a")
  message(FATAL_ERROR "TRELLIS_STATIC needs -DTRELLIS_LIBPQ_PREFIX=<dir> with lib/libpq.a "
                      "(scripts/build-port.sh builds one)")
endif()

set(OPENSSL_USE_STATIC_LIBS TRUE)
find_package(OpenSSL 3 REQUIRED)

add_library(PostgreSQL::PostgreSQL INTERFACE IMPORTED)
set_target_properties(PostgreSQL::PostgreSQL PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${TRELLIS_LIBPQ_PREFIX}/include"
  INTERFACE_LINK_LIBRARIES
    "${TRELLIS_LIBPQ_PREFIX}/lib/libpq.a;${TRELLIS_LIBPQ_PREFIX}/lib/libpgcommon_shlib.a;${TRELLIS_LIBPQ_PREFIX}/lib/libpgport_shlib.a;OpenSSL::SSL;OpenSSL::Crypto;Threads::Threads;${CMAKE_DL_LIBS}")

find_package(fmt REQUIRED)
add_library(spdlog::spdlog INTERFACE IMPORTED)
set_target_properties(spdlog::spdlog PROPERTIES
  INTERFACE_COMPILE_DEFINITIONS "SPDLOG_HEADER_ONLY;SPDLOG_FMT_EXTERNAL"
  INTERFACE_LINK_LIBRARIES "fmt::fmt-header-only;Threads::Threads")

add_link_options(-static)

# Size: build-port.sh refuses a release binary over 10 MiB (issue #16), and
# a static link pulls in whole archive members (OpenSSL, libpq, libstdc++)
# plus every engine function, used or not. Each function and object in its
# own section lets the linker drop what nothing reaches: ~0.9 MB off the
# x86_64 binary (10.46 MB -> ~9.6 MB; RELEASING.md "Size budget").
#
# Here, not in CMakeLists.txt, on purpose: only the release build has a size
# limit, and the development build is what the tests, the debugger and the
# benchmarks run. Changing its flags would recompile every object in every
# developer's tree (and the ccache shared between trees) for nothing it
# needs; its binary is dynamically linked and has no size limit. The flags
# change no behaviour (the same code runs, only unreferenced sections
# go), and test-packaging.sh runs the release binaries through the protocol
# sessions, so the release build is tested as built.
add_compile_options(-ffunction-sections -fdata-sections)
add_link_options(-Wl,--gc-sections)

# Trellis's own code (engine, protocol, port; libpq and OpenSSL come prebuilt)
# is optimised for size in the release build: its time goes to waiting on
# PostgreSQL, not to CPU, and -Os takes about a third off the engine's text,
# the part of the binary that grows with every feature (RELEASING.md "Size
# budget" has the measurements).
set(CMAKE_CXX_FLAGS_RELEASE "-Os -DNDEBUG")
set(CMAKE_C_FLAGS_RELEASE "-Os -DNDEBUG")
