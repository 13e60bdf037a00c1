"""What people send: downloads into the inbox, images prepared, documents read in a capped child
process, voice transcribed."""
