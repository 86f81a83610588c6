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
