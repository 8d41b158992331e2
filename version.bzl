"""mutagrad's version: the one place it is written.

Read by //:version (mutagrad::version()), //packaging (mutagrad.pc, the CMake package) and
//python:wheel (the wheel's name and metadata; mutagrad.__version__ comes from the extension).
"""

MUTAGRAD_VERSION = "0.1.0"
