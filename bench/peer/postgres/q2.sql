-- Q2: a post, with its author's username and its counts
\set p random(1, :nposts)
SELECT * FROM posts WHERE post_no = :p;
