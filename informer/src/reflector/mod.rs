//! The reflector: keeps a queue fed from a ListerWatcher (being written).
