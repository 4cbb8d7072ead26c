/*
 * The packages' one program: rouse, rouse-gateway, rouse-agent and rouse-pushd linked into one binary
 * (/usr/bin/rouse; the other three are symlinks to it), so the Swift runtime, FoundationEssentials and
 * every library module they share are installed and mapped once instead of four times (docs/benchmarks.md,
 * "Footprint"). deploy/package.sh links it from the object files SwiftPM compiled for the four products: SwiftPM
 * names each executable module's entry point <module>_main (it does so on Linux so that tests can link
 * executables), and this main picks one by the name the program was started under (argv[0]'s last component).
 * Any other name runs rouse, the command-line tool.
 */
#include <string.h>

int rouse_main(int argc, char **argv);
int rouse_agent_main(int argc, char **argv);
int rouse_gateway_main(int argc, char **argv);
int rouse_pushd_main(int argc, char **argv);

int main(int argc, char **argv) {
    const char *name = argc > 0 && argv[0] != NULL ? argv[0] : "rouse";
    const char *slash = strrchr(name, '/');
    if (slash != NULL) name = slash + 1;
    if (strcmp(name, "rouse-agent") == 0) return rouse_agent_main(argc, argv);
    if (strcmp(name, "rouse-gateway") == 0) return rouse_gateway_main(argc, argv);
    if (strcmp(name, "rouse-pushd") == 0) return rouse_pushd_main(argc, argv);
    return rouse_main(argc, argv);
}
