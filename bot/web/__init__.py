"""The public web pages of servers that opt in: boards, speed boards, the map, members."""
