import sys; sys.path.insert(0,'/work/redteam_nb')
from mk import *
nb(sys.argv[1], HONEST)
