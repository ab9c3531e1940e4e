//! Pure reflector decisions: which request next, with which resourceVersion, after how long (being written).
