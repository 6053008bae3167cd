-- Q4: a post's comments, with their authors' usernames
\set p random(1, :nposts)
SELECT * FROM comments WHERE post_no = :p ORDER BY creation_date;
