"""The file-manager side of Nimbus: talks to nimbusd over its control socket.

Pure Python (standard library only) so that it can be tested without a desktop; the Nautilus
glue in nimbus_nautilus.py is the only part that imports gi.
"""
